import Foundation
import Synchronization

/// The bare uploader's request body: an `InputStream` that hands out `total` bytes copied from
/// one prefilled 1 MiB buffer (the same lines as ``PipeGenerator``), then ends. No pipe, no
/// ring, no waiting: one `memcpy` per `read`, the least any body stream can do.
///
/// Contract with URLSession on Linux (DesignNotes, platform fact 3): `hasBytesAvailable` is true until
/// every byte was handed out, and `read` returns 0 only at the end.
///
/// Thread safety: `read` runs on URLSession's one reading thread; the count of bytes handed out
/// is an atomic so any thread may ask `hasBytesAvailable` or `streamStatus`.
final class MemoryBodyStream: InputStream {
    private let total: Int
    private let handedOut = Atomic<Int>(0)
    private let opened = Atomic<Bool>(false)
    /// Written once in `init`, then only read (by the one reading thread).
    private let pattern: UnsafeMutableRawBufferPointer

    init(total: Int) {
        self.total = total
        pattern = UnsafeMutableRawBufferPointer.allocate(byteCount: PipeGenerator.bufferSize, alignment: 4096)
        PipeGenerator.fill(pattern)
        super.init(data: Data())
    }

    deinit {
        pattern.deallocate()
    }

    override func open() { opened.store(true, ordering: .relaxed) }
    override func close() {}

    override var streamStatus: Stream.Status {
        if handedOut.load(ordering: .relaxed) >= total { return .atEnd }
        return opened.load(ordering: .relaxed) ? .open : .notOpen
    }

    override var streamError: Error? { nil }

    override var hasBytesAvailable: Bool { handedOut.load(ordering: .relaxed) < total }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let done = handedOut.load(ordering: .relaxed)
        let offset = done % pattern.count
        let count = min(len, total - done, pattern.count - offset)
        guard count > 0, let base = pattern.baseAddress else { return 0 }
        UnsafeMutableRawPointer(buffer).copyMemory(from: base + offset, byteCount: count)
        handedOut.add(count, ordering: .relaxed)
        return count
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}
