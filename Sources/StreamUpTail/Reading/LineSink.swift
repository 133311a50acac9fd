import StreamUp

/// Where a `LineReader` puts what it reads: the upload's writer, or an array in a test.
///
/// Thread safety: used from one thread (the tailer's).
protocol LineSink {
    /// Writes every byte of `bytes`, which are `mark`'s source bytes (nil: bytes of no source,
    /// such as the newline added to an unterminated last line); blocks while the buffer is
    /// full. Throws once the upload has stopped or the producer was cancelled.
    func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) throws
    /// When a record it holds (a multiline record waiting for a continuation) is due to go out
    /// without more lines; nil when it holds none.
    var deadline: ContinuousClock.Instant? { get }
    /// Writes the records it holds that are due at `now`.
    func expire(at now: ContinuousClock.Instant) throws
}

extension LineSink {
    var deadline: ContinuousClock.Instant? { nil }
    func expire(at now: ContinuousClock.Instant) throws {}
}

extension BlockingStreamWriter: LineSink {}
