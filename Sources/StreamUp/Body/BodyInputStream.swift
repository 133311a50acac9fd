import Foundation
import StreamUpSystem

/// The `InputStream` URLSession reads a request body from, pulling from a chain of
/// ``BodySource`` stages (a replay buffer's window, then optionally an envelope and gzip).
///
/// Contract with URLSession on Linux (DesignNotes, platform fact 3): `hasBytesAvailable` stays true until
/// the body has ended, and `read` blocks until it has at least one byte; it returns 0 only at
/// the end and -1 once the body failed (see `streamError`).
///
/// Thread safety: `read` runs on URLSession's one reading thread; the status is guarded by a
/// `Mutex` so any thread may ask for it.
final class BodyInputStream: InputStream {
    private struct Status {
        var opened = false
        var ended = false
        var error: StreamUpError?
        var bytesRead = 0
    }
    private let source: any BodySource
    private let status = Mutex(Status())

    init(source: any BodySource) {
        self.source = source
        super.init(data: Data())
    }

    /// Bytes handed out so far.
    var bytesRead: Int { status.withLock { $0.bytesRead } }

    /// Fails the stream: its next read returns -1 and `streamError` says why.
    func fail(_ error: StreamUpError) {
        status.withLock { if $0.error == nil { $0.error = error } }
    }

    override func open() { status.withLock { $0.opened = true } }
    override func close() {}

    override var streamStatus: Stream.Status {
        status.withLock { status in
            if status.error != nil { return .error }
            if status.ended { return .atEnd }
            return status.opened ? .open : .notOpen
        }
    }

    override var streamError: Error? { status.withLock { $0.error } }

    override var hasBytesAvailable: Bool { status.withLock { !$0.ended } }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        if status.withLock({ $0.error != nil }) { return -1 }
        do {
            while true {
                switch try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: len), blocking: true) {
                case .bytes(let count):
                    status.withLock { $0.bytesRead += count }
                    return count
                case .end:
                    status.withLock { $0.ended = true }
                    return 0
                case .wouldBlock:
                    continue  // a blocking read does not say this; ask again
                }
            }
        } catch {
            let failure = error as? StreamUpError ?? StreamUpError(.producerFailed, "the body failed: \(error)")
            status.withLock { if $0.error == nil { $0.error = failure } }
            return -1
        }
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}
