/// A body stage that passes the stage below through unchanged and fails the body, before
/// handing out a byte of it, when `sequence` occurs in what passes (a multipart boundary inside
/// the records; see ``MultipartForm``). Occurrences split across reads are found: the last
/// `sequence.count - 1` bytes handed out are kept and searched together with the next read.
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
final class ForbiddenSequenceStage: BodySource {
    private let lower: any BodySource
    private let sequence: [UInt8]
    private let message: String
    /// The last bytes handed out, at most `sequence.count - 1`.
    private var carry: [UInt8] = []

    /// - Parameter message: the failure, when `sequence` occurs.
    init(over lower: any BodySource, sequence: [UInt8], message: String) {
        precondition(!sequence.isEmpty, "a forbidden sequence has at least one byte")
        self.lower = lower
        self.sequence = sequence
        self.message = message
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        let result = try lower.read(into: buffer, blocking: blocking)
        guard case .bytes(let count) = result else { return result }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
        // Across the previous read and this one, then within this one.
        let joint = carry + bytes.prefix(sequence.count - 1)
        if Self.contains(joint[...], sequence) || Self.contains(bytes[...], sequence) {
            throw StreamUpError(.invalidConfiguration, message)
        }
        carry = Array((carry + bytes.suffix(sequence.count - 1)).suffix(sequence.count - 1))
        return result
    }

    /// Whether `needle` occurs in `haystack`: each place the first byte occurs is compared.
    static func contains<Haystack: Collection>(_ haystack: Haystack, _ needle: [UInt8]) -> Bool where Haystack.Element == UInt8 {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        var start = haystack.startIndex
        let lastStart = haystack.index(haystack.endIndex, offsetBy: -needle.count)
        while start <= lastStart {
            guard let found = haystack[start...lastStart].firstIndex(of: first) else { return false }
            if haystack[found...].starts(with: needle) { return true }
            start = haystack.index(after: found)
        }
        return false
    }
}

@available(*, unavailable)
extension ForbiddenSequenceStage: Sendable {}
