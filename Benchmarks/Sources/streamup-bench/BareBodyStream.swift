import Foundation
import Synchronization

/// What the bare uploaders' request bodies share: the `InputStream` contract URLSession on Linux
/// relies on (DesignNotes, platform fact 3): `hasBytesAvailable` is true until the body ended, and
/// `read` returns 0 only at the end. A subclass says where the bytes come from (`read`) and
/// whether the body ended (`isAtEnd`).
///
/// Thread safety: `read` runs on URLSession's one reading thread; `opened` is an atomic, and a
/// subclass keeps `isAtEnd` safe to ask from any thread.
class BareBodyStream: InputStream {
    private let opened = Atomic<Bool>(false)

    init() {
        super.init(data: Data())
    }

    /// Whether every byte of the body was handed out.
    var isAtEnd: Bool { preconditionFailure("a body stream says when it ends") }

    override func open() { opened.store(true, ordering: .relaxed) }
    override func close() {}

    override var streamStatus: Stream.Status {
        if isAtEnd { return .atEnd }
        return opened.load(ordering: .relaxed) ? .open : .notOpen
    }

    override var hasBytesAvailable: Bool { !isAtEnd }

    override var streamError: Error? { nil }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}
