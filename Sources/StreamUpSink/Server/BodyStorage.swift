import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The output directory and its naming scheme.
///
/// Each stored body gets `SSSSSSSS-METHOD.body` (or `.partial`, see ``BodyFile``), where
/// `SSSSSSSS` is the request's sequence number zero-padded to 8 digits and `METHOD` is the
/// request method with anything outside `A–Z a–z 0–9 - _` replaced by `_` (at most 16
/// characters). Sorting the names therefore gives arrival order (for the first 99,999,999
/// requests). Sequence numbers continue after the highest one already in the directory (pieces
/// held aside by a stream included, see ``StreamStore``), so a restarted sink never collides
/// with, or sorts before, an earlier run's files.
///
/// Thread safety: immutable after `init`; callable from any thread.
struct BodyStorage: Sendable {
    let directory: String
    /// The highest sequence number found in the directory when the storage was opened.
    let highestExistingSequence: Int

    /// Creates `directory` (and its parents) if missing, checks that files can be made in it,
    /// and scans it for earlier bodies.
    /// - Throws: ``SinkError`` (code `storage`, one line with the remedy) when the directory
    ///   cannot be created or written to.
    init(directory: String) throws(SinkError) {
        do {
            try BodyStorage.makeDirectories(directory)
            _ = try SystemCall.runBlocking("access") { access(directory, W_OK | X_OK) }
        } catch {
            let verb = error.operation == "mkdir" ? "create" : "use"
            throw error.happened(while: "cannot \(verb) the output directory \(directory)")
        }
        self.directory = directory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        // Pieces a stream holds aside keep their body's name: a new body must not take it again.
        highestExistingSequence =
            names.compactMap { BodyStorage.sequence(inFileName: $0) ?? StreamStore.asideName($0).flatMap(\.sequence) }.max() ?? 0
    }

    /// `mkdir -p`: `mkdir(2)` of each missing component; an existing one must be a directory
    /// (`stat(2)`, following links: a linked output directory is the user's choice).
    private static func makeDirectories(_ path: String) throws(SinkError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            let current = prefix
            do {
                _ = try SystemCall.runBlocking("mkdir") { mkdir(current, 0o755) }
            } catch  where error.errno == EEXIST {
                var status = stat()
                guard stat(current, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                    throw SinkError(.storage, operation: "mkdir", errno: EEXIST, detail: current)
                }
            } catch {
                throw SinkError(.storage, operation: "mkdir", errno: error.errno, detail: current)
            }
            prefix += "/"
        }
    }

    /// Opens a new `.partial` file for request number `sequence`.
    func createFile(sequence: Int, method: String) throws(SinkError) -> BodyFile {
        try BodyFile(directory: directory, baseName: BodyStorage.baseName(sequence: sequence, method: method))
    }

    /// `00000042-POST`.
    static func baseName(sequence: Int, method: String) -> String {
        let digits = String(sequence)
        let padded = String(repeating: "0", count: max(0, 8 - digits.count)) + digits
        let safeMethod = String(
            method.prefix(16).map { character -> Character in
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
