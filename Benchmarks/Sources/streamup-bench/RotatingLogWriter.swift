import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The run soak's applications: appends ``LogWriter``-style lines (`seq=` + number) to
/// `paths` at a steady total rate (line *i* to file *i* mod the number of files), opening each
/// file for every batch so that a rotation (`app.log` renamed to `app.log.1`, replacing the one
/// before) makes the next batch start a new file, as logrotate with a reopening application
/// does. Every `rotateSeconds` all files rotate, between two batches.
///
/// Thread safety: the counters are behind `LockedValue`s; ``stop()`` and ``linesWritten`` are
/// callable from any thread, the writing runs on a thread of its own.
final class RotatingLogWriter: Sendable {
    private let written = LockedValue(0)
    private let rotations = LockedValue(0)
    private let failure = LockedValue<String?>(nil)
    private let running = LockedValue(true)
    private let done = DispatchSemaphore(value: 0)

    init(paths: [String], rate: Int, rotateSeconds: Double) {
        let thread = Thread { [self] in
            let start = MonotonicClock.now()
            var nextRotation = start + UInt64(rotateSeconds * 1e9)
            var line = [UInt8](repeating: 0, count: LogWriter.lineLength)
            var batches = [[UInt8]](repeating: [], count: paths.count)
            while running.get() {
                MonotonicClock.sleep(seconds: 0.01)
                let now = MonotonicClock.now()
                let due = Int(MonotonicClock.seconds(now - start) * Double(rate))
                let first = written.get()
                guard due > first else { continue }
                for number in first..<due {
                    Self.fill(&line, number: number)
                    batches[number % paths.count].append(contentsOf: line)
                }
                for (index, path) in paths.enumerated() where !batches[index].isEmpty {
                    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
                    let ok = fd >= 0 && batches[index].withUnsafeBytes { Descriptors.writeAll(fd, $0) }
                    if fd >= 0 { close(fd) }
                    guard ok else {
                        failure.set("write to \(path) failed: \(String(cString: strerror(errno)))")
                        running.set(false)
                        break
                    }
                    batches[index].removeAll(keepingCapacity: true)
                }
                written.set(due)
                if now >= nextRotation {
                    for path in paths { rename(path, path + ".1") }
                    rotations.update { $0 += 1 }
                    nextRotation += UInt64(rotateSeconds * 1e9)
                }
            }
            done.signal()
        }
        thread.name = "bench.rotating-writer"
        thread.start()
    }

    var linesWritten: Int { written.get() }
    var rotationCount: Int { rotations.get() }
    var failureText: String? { failure.get() }

    /// Stops writing after the batch in progress.
    func stop() {
        running.set(false)
        done.wait()
        done.signal()
    }

    /// Line `number`: `seq=` and ten digits, filler, a newline: ``LogWriter/lineLength`` bytes.
    private static func fill(_ line: inout [UInt8], number: Int) {
        let text = "seq=" + String(format: "%010d", number)
        let filler = Array(" INFO app.request method=GET path=/api/v1/items status=200 duration_ms=12 ok ".utf8)
        for (index, byte) in text.utf8.enumerated() { line[index] = byte }
        let rest = text.utf8.count
        for index in rest..<(LogWriter.lineLength - 1) { line[index] = filler[(index - rest) % filler.count] }
        line[LogWriter.lineLength - 1] = UInt8(ascii: "\n")
    }
}
