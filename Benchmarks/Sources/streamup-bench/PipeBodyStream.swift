import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The pipe bare uploader's request body: each `read` is one blocking `read(2)` of a descriptor
/// (the bench's pipe on stdin) straight into URLSession's buffer; end of file, or the body's
/// `limit` when it has one, ends the body. No ring, no other thread: the least a body read from
/// a pipe can cost.
///
/// Thread safety: `read` runs on URLSession's one reading thread, which alone touches
/// `remaining`; whether the body ended
/// is an atomic so any thread may ask `hasBytesAvailable` or `streamStatus`; the error, set by
/// the reading thread before it returns -1, is guarded by its `Mutex`.
final class PipeBodyStream: BareBodyStream {
    private let descriptor: Int32
    private let ended = Atomic<Bool>(false)
    private let error = Mutex<Error?>(nil)
    private var remaining: Int

    /// A body of the descriptor's bytes until its end, or of its next `limit` bytes.
    init(descriptor: Int32, limit: Int = .max) {
        self.descriptor = descriptor
        self.remaining = limit
        super.init()
    }

    override var isAtEnd: Bool { ended.load(ordering: .relaxed) }

    override var streamError: Error? { error.withLock { $0 } }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        guard remaining > 0 else {
            ended.store(true, ordering: .relaxed)
            return 0
        }
        while true {
            let count = Glibc.read(descriptor, buffer, min(len, remaining))
            if count > 0 {
                remaining -= count
                if remaining == 0 { ended.store(true, ordering: .relaxed) }
                return count
            }
            if count == 0 {
                ended.store(true, ordering: .relaxed)
                return 0
            }
            if errno == EINTR { continue }
            let failure = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            error.withLock { $0 = failure }
            ended.store(true, ordering: .relaxed)
            return -1
        }
    }
}
