import StreamUp
import StreamUpSystem

extension FileTailer {
    /// Why nothing can be followed, when that is already certain at start: every pattern is a
    /// plain path (no wildcard, not a directory) to something that is there but cannot be read
    /// (permissions, not a regular file). Such a run would wait forever for nothing. Nil when
    /// a path can be read, or is not there yet (it may be created, as `tail -F` waits for it),
    /// or a glob or directory may still bring files.
    package static func nothingToFollow(patterns: [String]) -> String? {
        var reasons: [String] = []
        for text in patterns {
            guard !text.hasSuffix("/"), let pattern = try? GlobPattern(text), !pattern.hasWildcards else { return nil }
            guard let status = (try? FileStatus.of(path: text, throwing: StreamUpError.self)) ?? nil, !status.isDirectory else { return nil }
            do {
                guard try ReadOnlyFile.open(text) != nil else { return nil }
                return nil
            } catch {
                let reason = error.code == .invalidConfiguration ? "not a regular file" : error.errno.map(SourceEvent.words(errno:)) ?? "\(error)"
                reasons.append("\(text): \(reason)")
            }
        }
        return reasons.isEmpty ? nil : "nothing can be followed: " + reasons.joined(separator: "; ")
    }
}
