extension TelemetryEmitter {
    /// Runs `body` with an emitter, then finishes the upload and returns the server's answer
    /// (nil when nothing was emitted): the emitter lives exactly as long as the call. If `body`
    /// throws, the upload is cancelled and the error is thrown.
    ///
    /// ```swift
    /// let answer = try await TelemetryEmitter.withEmitter(UploadConfiguration(url: url)) { emitter in
    ///     try await emitter.emit(["event": "started"])
    /// }
    /// ```
    @discardableResult
    public static func withEmitter(
        _ configuration: UploadConfiguration, options: Options = Options(), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in },
        _ body: (TelemetryEmitter) async throws -> Void
    ) async throws -> UploadResponse? {
        let emitter = try TelemetryEmitter(configuration, options: options, onEvent: onEvent)
        do {
            try await body(emitter)
        } catch {
            emitter.cancel()
            _ = try? await emitter.finish()
            throw error
        }
        return try await emitter.finish()
    }
}
