import Foundation

/// The reading end of a ``BoundStreamPair``: what the upload task reads the body from.
///
/// Contract with URLSession on Linux (DesignNotes, platform fact 3): `hasBytesAvailable` stays `true` until
/// the writer has closed and every byte was read, and `read(_:maxLength:)` waits until at least
/// one byte is there. It returns 0 only at the end and -1 once the pair has failed (see
/// `streamError`), so a cancelled upload is woken rather than left waiting.
///
/// Thread safety: all state lives in the shared core behind its lock (Foundation's `Stream`
/// opts out of `Sendable`, so the library passes it across threads in a `StreamReference`); one reading thread at a
/// time, any thread for the rest.
package final class BoundInputStream: InputStream {
    let core: BoundStreamCore
    private let delegateBox = DelegateBox()

    init(core: BoundStreamCore) {
        self.core = core
        super.init(data: Data())
        core.inputStream = self
    }

    package override func open() {
        core.open(.input)
    }

    package override func close() {
        core.close(.input)
    }

    package override var streamStatus: Stream.Status { core.status(of: .input) }

    package override var streamError: Error? {
        core.status(of: .input) == .error ? core.failure : nil
    }

    package override var hasBytesAvailable: Bool { core.inputHasBytesAvailable }

    package override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        core.read(buffer, maxLength: len)
    }

    package override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
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
        core.setTarget(.runLoop(aRunLoop, [mode]), for: .input)
    }

    package override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        core.setTarget(nil, for: .input)
    }

    /// Delivers this stream's events on `queue` instead of a run loop (nil stops delivery).
    package func setDispatchQueue(_ queue: DispatchQueue?) {
        core.setTarget(queue.map { .queue($0) }, for: .input)
    }

}
