/// The input side of a single request's bound pair as the lowest body stage, so an envelope or
/// gzip can sit above it (``BodyEncoding``).
///
/// Thread safety: read by URLSession's one reading thread; the core is thread-safe.
final class BoundStreamSource: BodySource, @unchecked Sendable {
    private let input: StreamReference<BoundInputStream>

    init(_ input: BoundInputStream) {
        self.input = StreamReference(input)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        let core = input.value.core
        if !blocking && core.bufferedCount == 0 && core.status(of: .input) == .open { return .wouldBlock }
        let count = core.read(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: buffer.count)
        if count > 0 { return .bytes(count) }
        if count == 0 { return .end }
        throw core.failure ?? StreamUpError(.bodyStreamClosed, "the body failed")
    }
}
