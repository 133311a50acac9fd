/// Streams every element of an `AsyncSequence` of byte arrays, in order, then ends the body.
///
/// ```swift
/// let lines = AsyncStream<[UInt8]> { continuation in … }
/// let response = try await uploader.run(AsyncSequenceProducer(lines))
/// ```
///
/// Thread safety: immutable; `produce` iterates the sequence in one task.
package struct AsyncSequenceProducer<Elements: AsyncSequence & Sendable>: Producer where Elements.Element == [UInt8] {
    package let elements: Elements

    package init(_ elements: Elements) {
        self.elements = elements
    }

    package func produce(into writer: StreamWriter) async throws {
        for try await bytes in elements {
            try await writer.write(bytes)
        }
    }
}
