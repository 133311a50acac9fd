import Foundation

/// Reads a child's stdout on a thread of its own until end of file: keeps the first 64 KiB and
/// discards the rest, so the child never blocks on a full pipe.
///
/// Thread safety: what was kept is handed over through a mutex-guarded slot.
final class OutputReader: Sendable {
    static let keptBytes = 64 * 1024

    private let kept = LockedValue<[UInt8]>([])
    private let done = DispatchSemaphore(value: 0)

    /// Starts reading `fd`, which the reader owns and closes at end of file.
    init(fd: CInt) {
        let kept = self.kept
        let done = self.done
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                kept.update { kept in
                    let room = Self.keptBytes - kept.count
                    if room > 0 { kept += buffer[0..<min(room, count)] }
                }
            }
            close(fd)
            done.signal()
        }
        thread.name = "bench.child-stdout"
        thread.start()
    }

    /// The first line, waiting at most `timeout` seconds for it.
    func firstLine(timeout: Double) -> String? {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            let bytes = kept.get()
            if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                return String(decoding: bytes[..<newline], as: UTF8.self)
            }
            if MonotonicClock.now() >= deadline { return nil }
            MonotonicClock.sleep(seconds: 0.01)
        }
    }

    /// Waits for end of file and returns the complete lines kept.
    func lines() -> [String] {
        join()
        return String(decoding: kept.get(), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func join() {
        done.wait()
        done.signal()
    }
}
