/// A bound pair's core is what a ``StreamWriter`` writes into for a single request. It keeps no
/// source marks: a single request is acknowledged as a whole, when it ends.
extension BoundStreamCore: WritableBuffer {
    func withWritableSpace(
        maxLength: Int, mark: SourceMark?, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws -> FillOutcome {
        try withWritableSpace(maxLength: maxLength, fill)
    }

    var isFinishedWriting: Bool { status(of: .output) == .closed }

    func finishWriting() { close(.output) }

    func failWriting(_ error: StreamUpError) { fail(error) }
}
