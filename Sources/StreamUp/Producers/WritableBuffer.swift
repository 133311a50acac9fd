/// The buffer a ``StreamWriter`` writes into: the core of a bound stream pair (one request) or a
/// `ReplayBuffer` (acknowledged segments). Both take bytes only into free space, in place,
/// and never block the writer.
///
/// Thread safety: one writing thread or task at a time; the counters, `finishWriting` and
/// `failWriting` may be used from any thread.
protocol WritableBuffer: AnyObject, Sendable {
    /// Offers free space (one contiguous piece of at most `maxLength` bytes) to `fill`, which
    /// returns how many bytes it put there; those bytes came from `mark` (nil: no source to
    /// remember). Never blocks, apart from what `fill` does.
    func withWritableSpace(
        maxLength: Int, mark: SourceMark?, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws -> FillOutcome
    /// Bytes that can be written now without waiting (0 once writing has failed).
    var writableCount: Int { get }
    /// The failure that ended writing, if any.
    var failure: StreamUpError? { get }
    /// Bytes the producer has written into this buffer.
    var bytesWritten: Int { get }
    /// Whether the writing side was ended (by ``finishWriting(stopped:)``).
    var isFinishedWriting: Bool { get }
    /// Asks for `observer` to be signalled when a full buffer gets space (or fails or closes).
    /// Returns false, asking nothing, when writing can be retried at once.
    func requestSpaceNotification() -> Bool
    /// Sets who ``requestSpaceNotification()`` signals: the one writer.
    func setSpaceObserver(_ observer: SpaceSignal)
    /// Ends the input: the reader gets what is buffered, then the end. `stopped`: stopped
    /// before the input's own end.
    func finishWriting(stopped: Bool)
    /// Ends the input with a failure; later writes and reads fail with `error`.
    func failWriting(_ error: StreamUpError)
}
