import Foundation

/// The output directory and its naming scheme.
///
/// Each stored body gets `SSSSSSSS-METHOD.body` (or `.partial`, see ``BodyFile``), where
/// `SSSSSSSS` is the request's sequence number zero-padded to 8 digits and `METHOD` is the
/// request method with anything outside `A–Z a–z 0–9 - _` replaced by `_` (at most 16
/// characters). Sorting the names therefore gives arrival order (for the first 99,999,999
/// requests). Sequence numbers continue after the highest one already in the directory, so a
/// restarted sink never collides with, or sorts before, an earlier run's files.
///
/// Thread safety: immutable after `init`; callable from any thread.
struct BodyStorage: Sendable {
    let directory: String
    /// The highest sequence number found in the directory when the storage was opened.
    let highestExistingSequence: Int

    /// Creates `directory` (and its parents) if missing and scans it for earlier bodies.
    init(directory: String) throws(SinkError) {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SinkError(.storage, operation: "mkdir", detail: "\(directory): \(error)")
        }
        self.directory = directory
        let names = (try? manager.contentsOfDirectory(atPath: directory)) ?? []
        highestExistingSequence = names.compactMap(BodyStorage.sequence(inFileName:)).max() ?? 0
    }

    /// Opens a new `.partial` file for request number `sequence`.
    func createFile(sequence: Int, method: String) throws(SinkError) -> BodyFile {
        try BodyFile(directory: directory, baseName: BodyStorage.baseName(sequence: sequence, method: method))
    }

    /// `00000042-POST`.
    static func baseName(sequence: Int, method: String) -> String {
        let digits = String(sequence)
        let padded = String(repeating: "0", count: max(0, 8 - digits.count)) + digits
        let safeMethod = String(method.prefix(16).map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_")
                ? character : "_"
        })
        return "\(padded)-\(safeMethod)"
    }

    /// The sequence number a stored file's name starts with, if it follows the scheme.
    static func sequence(inFileName name: String) -> Int? {
        let digits = name.prefix { $0.isASCII && $0.isNumber }
        guard digits.count >= 8, name.dropFirst(digits.count).first == "-" else { return nil }
        return Int(digits)
    }
}
