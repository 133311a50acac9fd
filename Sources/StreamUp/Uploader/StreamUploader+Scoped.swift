import Foundation

extension StreamUploader {
    /// Streams what `body` writes with `options` (acknowledged segments by default, or one
    /// live request: ``Options/singleRequest``) and returns the last answer once every byte
    /// is acknowledged: the uploader lives exactly as long as the call. If `body` throws, the
    /// upload fails and this throws ``StreamUpError`` (`.producerFailed`); a spool keeps what
    /// was not acknowledged.
    ///
    /// ```swift
    /// let answer = try await StreamUploader.withUploader(UploadConfiguration(url: url)) { writer in
    ///     try await writer.write(Array("hello\n".utf8))
    /// }
    /// ```
    public static func withUploader(
        _ configuration: UploadConfiguration, options: Options = Options(),
        onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in },
        _ body: @escaping @Sendable (StreamWriter) async throws -> Void
    ) async throws -> UploadResponse {
        try await StreamUploader(configuration, options: options, onEvent: onEvent).run(ClosureProducer(body: body))
    }
}
