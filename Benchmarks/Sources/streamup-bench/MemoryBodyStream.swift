import Foundation
import Synchronization

/// The memory bare uploader's request body: hands out `total` bytes copied from one prefilled
/// 1 MiB buffer (the same lines as ``PipeGenerator``), then ends. No pipe, no ring, no waiting:
/// each `read` fills all it is asked for (up to the end of the body), wrapping around the
/// buffer's end within the read, so it makes no more reads than the body needs.
///
/// Every body of the process reads the same buffer, made once (``Pattern/shared``), so a body
/// of many requests costs no more to make than one of a single request.
///
/// Thread safety: `read` runs on URLSession's one reading thread; the count of bytes handed out
/// is an atomic so any thread may ask `hasBytesAvailable` or `streamStatus`.
final class MemoryBodyStream: BareBodyStream {
    /// The lines every body copies, filled once and never written again, then read by any
    /// body's reading thread.
    ///
    /// Thread safety: immutable after `init`.
    final class Pattern: @unchecked Sendable {
        static let shared = Pattern()
        let bytes: UnsafeMutableRawBufferPointer

        private init() {
            bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: PipeGenerator.bufferSize, alignment: 4096)
            PipeGenerator.fill(bytes)
        }
    }

    private let total: Int
    private let handedOut = Atomic<Int>(0)
    private let pattern = Pattern.shared.bytes

    init(total: Int) {
        self.total = total
        super.init()
    }

    override var isAtEnd: Bool { handedOut.load(ordering: .relaxed) >= total }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let done = handedOut.load(ordering: .relaxed)
        let count = min(len, total - done)
        guard count > 0, let base = pattern.baseAddress else { return 0 }
        var copied = 0
        while copied < count {
            let offset = (done + copied) % pattern.count
            let piece = min(count - copied, pattern.count - offset)
            (UnsafeMutableRawPointer(buffer) + copied).copyMemory(from: base + offset, byteCount: piece)
            copied += piece
        }
        handedOut.add(count, ordering: .relaxed)
        return count
    }
}
