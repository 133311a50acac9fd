import Foundation

/// The writing end of a ``BoundStreamPair``: what producers write the body into.
///
/// `write(_:maxLength:)` never blocks: it copies what fits and returns that count, 0 when the
/// buffer is full (wait for `.hasSpaceAvailable`), or -1 once the pair has failed or the reader
/// has closed (see `streamError`). `close()` ends the body after the buffered bytes are read.
///
/// Thread safety: all state lives in the shared core behind its lock (Foundation's `Stream`
/// opts out of `Sendable`, so the library passes it across threads in a `StreamReference`); one writing thread at a
/// time, any thread for the rest.
package final class BoundOutputStream: OutputStream {
    let core: BoundStreamCore
    private let delegateBox = DelegateBox()

    init(core: BoundStreamCore) {
        self.core = core
        super.init(toMemory: ())
        core.outputStream = self
    }

    @available(*, unavailable, message: "create a BoundStreamPair")
    package required init(toMemory: ()) {
        fatalError("create a BoundStreamPair")
    }

    package override func open() {
        core.open(.output)
    }

    package override func close() {
        core.close(.output)
    }

    package override var streamStatus: Stream.Status { core.status(of: .output) }

    package override var streamError: Error? {
        core.status(of: .output) == .error ? core.failure : nil
    }

    package override var hasSpaceAvailable: Bool { core.outputHasSpaceAvailable }

    package override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard core.status(of: .output) != .notOpen else { return -1 }
        return core.write(buffer, maxLength: len)
    }

    /// Lets the caller fill free buffer space in place (no intermediate copy), for example with
    /// `read(2)` from a file descriptor. `fill` gets one contiguous piece of at most `maxLength`
    /// bytes and returns how many it wrote. Returns that count, or nil when the buffer is full
    /// (`fill` is not called); throws ``StreamUpError`` once the pair has failed.
    package func write(
        maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws -> Int? {
        switch try core.withWritableSpace(maxLength: maxLength, fill) {
        case .wrote(let count): return count
        case .full: return nil
        case .failed: throw core.failure ?? StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")
        }
    }

    /// Ends the body with a failure instead of a clean end: the reader's next `read` returns -1
    /// and its `streamError` is `error`.
    package func fail(_ error: StreamUpError) {
        core.fail(error)
    }

    /// Receives the stream's events. Defaults to none (unlike Foundation's self-delegation).
    package override var delegate: StreamDelegate? {
        get { delegateBox.delegate }
        set {
            delegateBox.delegate = newValue
            core.pumpEvents()
        }
    }

    package override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        core.setTarget(.runLoop(aRunLoop, [mode]), for: .output)
    }

    package override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        core.setTarget(nil, for: .output)
    }

    /// Delivers this stream's events on `queue` instead of a run loop (nil stops delivery).
    package func setDispatchQueue(_ queue: DispatchQueue?) {
        core.setTarget(queue.map { .queue($0) }, for: .output)
    }

}
