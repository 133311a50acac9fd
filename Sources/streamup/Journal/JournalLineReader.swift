/// Cuts journalctl's output into lines (one JSON object each).
///
/// Thread safety: a value type, confined to the reading thread.
struct JournalLineReader {
    private var carry: [UInt8] = []

    /// The whole lines `bytes` completes.
    mutating func take(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = 0
        while let newline = bytes[start...].firstIndex(of: 0x0A) {
            if carry.isEmpty {
                lines.append(Array(bytes[start..<newline]))
            } else {
                lines.append(carry + bytes[start..<newline])
                carry = []
            }
            start = newline + 1
        }
        carry.append(contentsOf: bytes[start...])
        return lines
    }
}
