import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The fast stdin source for the throughput runs: a thread that writes one prefilled 1 MiB
/// buffer (lines of printable text) again and again with `write(2)` into a pipe until `total`
/// bytes are written, then closes its end. It stops early when the reader goes away (EPIPE).
///
/// It costs one `write` per MiB and no per-byte work, so it is far faster than any client here;
/// `head -c N /dev/zero` is not (it writes in small pieces).
///
/// Thread safety: the counters are atomics, readable from any thread while the writer runs.
final class PipeGenerator: Sendable {
    static let bufferSize = 1 << 20

    private let written = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)

    /// Starts writing `total` bytes into `fd` on a new thread; `fd` is closed when it ends.
    init(writingTo fd: CInt, total: Int) {
        let thread = Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 4096)
            defer { buffer.deallocate() }
            Self.fill(buffer)
            var remaining = total
            while remaining > 0 {
                let count = min(remaining, buffer.count)
                guard Descriptors.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<count])) else { break }
                remaining -= count
                self.written.add(count, ordering: .relaxed)
            }
            close(fd)
            self.done.signal()
        }
        thread.name = "bench.generator"
        thread.start()
    }

    /// Bytes written into the pipe so far.
    var bytesWritten: Int { written.load(ordering: .relaxed) }

    /// Waits until the writing thread has ended (all written, or the reader went away).
    func join() {
        done.wait()
        done.signal()
    }

    /// Lines of 64 bytes: a counter-like prefix and letters, ending in a newline.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        for index in 0..<buffer.count {
            buffer[index] = index % 64 == 63 ? UInt8(ascii: "\n") : alphabet[(index / 64 + index) % alphabet.count]
        }
    }
}

/// Remembers when a counter last moved, to tell a slow run from a stuck one.
///
/// Thread safety: used by the one thread that polls it.
final class StallWatch {
    private let limitNanos: UInt64
    private let progress: () -> Int
    private var lastValue: Int
    private var lastChange: UInt64

    /// `progress` is a counter that grows while the run is alive; a run whose counter has not
    /// moved for `seconds` counts as stalled.
    init(seconds: Double, progress: @escaping () -> Int) {
        limitNanos = UInt64(seconds * 1e9)
        self.progress = progress
        lastValue = progress()
        lastChange = MonotonicClock.now()
    }

    func isStalled() -> Bool {
        let now = MonotonicClock.now()
        let value = progress()
        if value != lastValue {
            lastValue = value
            lastChange = now
            return false
        }
        return now - lastChange > limitNanos
    }
}
