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

extension FileTailer {
    /// What this user cannot read of what `patterns` (less `excludes`) select now: files and
    /// directories that are there but refuse it (permissions), each with why. A path not there
    /// yet is no problem (it is waited for); nor is a match that is not a regular file.
    package static func readProblems(patterns: [String], excludes: [String] = []) -> [String] {
        let selection: PathSelection
        do {
            selection = try PathSelection(includes: patterns, excludes: excludes) { path in
                ((try? FileStatus.of(path: path, throwing: StreamUpError.self)) ?? nil)?.isDirectory ?? false
            }
        } catch {
            return ["\(error)"]
        }
        let scan = TailDiscovery.scan(selection)
        var problems = scan.skipped.filter { $0.reason != "not a regular file" }.map { "cannot read \($0.path): \($0.reason)" }
        for found in scan.files {
            do {
                _ = try ReadOnlyFile.open(found.path)
            } catch {
                problems.append("cannot read \(found.path): \(error.errno.map(SourceEvent.words(errno:)) ?? "\(error)")")
            }
        }
        return problems
    }
}
