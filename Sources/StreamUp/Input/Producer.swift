/// A source of body bytes for a ``StreamUploader``.
///
/// Implementation requirements:
/// - Write through the ``StreamWriter`` you are given; its `write` suspends while the buffer is
///   full, so never keep more than a bounded amount of your own data waiting.
/// - Return when your source ends: the uploader then sends what is left and ends the stream.
///   Throw to fail the upload.
/// - Stop promptly when the task is cancelled (the writer's waits throw `CancellationError`).
///
/// ```swift
/// struct Countdown: Producer {
///     func produce(into writer: StreamWriter) async throws {
///         for n in (1...3).reversed() { try await writer.write(Array("\(n)\n".utf8)) }
///     }
/// }
/// ```
///
/// Thread safety: producers are `Sendable`; the uploader calls `produce` once, from one task.
public protocol Producer: Sendable {
    /// Writes the source's bytes into `writer` until the source ends.
    func produce(into writer: StreamWriter) async throws
}
