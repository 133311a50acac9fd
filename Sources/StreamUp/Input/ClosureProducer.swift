/// A ``Producer`` made of one closure: what the scoped `withUploader` forms run.
///
/// Thread safety: the closure is `Sendable`; the uploader calls it once, from one task.
struct ClosureProducer: Producer {
    let body: @Sendable (StreamWriter) async throws -> Void

    func produce(into writer: StreamWriter) async throws {
        try await body(writer)
    }
}
