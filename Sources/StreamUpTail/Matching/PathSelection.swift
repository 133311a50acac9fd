import Foundation
import StreamUp

/// Which files a ``FileTailer`` follows: the paths its include patterns match, less those an
/// exclude pattern matches.
///
/// - An include that names a directory (it ends with `/`, or it has no wildcard and is a
///   directory when the tailer starts) stands for every file in it: `DIR/*` (not its
///   subdirectories; write `DIR/**/*` for those).
/// - An exclude with a `/` is matched against the whole path, spelled as the include spells it
///   (absolute or relative); one without a `/` against the file's name alone, so `*.gz`
///   excludes compressed files anywhere.
///
/// - streamup's own files (``FileTailer/Options/ownFiles``: the state file, the spool, dead
///   letters) are never followed, whatever the patterns say, nor the temporary and lock files
///   beside the state file (`.NAME.*`): a state file in a followed directory would otherwise
///   ship itself, each save a new line, in a loop.
///
/// Pure apart from the `isDirectory` question asked once per include at creation, and the
/// working directory read once to spell own files' paths absolute.
///
/// Thread safety: a value type.
struct PathSelection: Sendable, Equatable {
    /// The include patterns, with directories expanded to `DIR/*`.
    let includes: [GlobPattern]
    /// The patterns as given, parallel to ``includes`` (for messages).
    let given: [String]
    let excludes: [GlobPattern]
    /// streamup's own files and directories, absolute.
    let ownFiles: [String]

    /// - Throws: ``StreamUpError`` `.invalidConfiguration` when there is no include or a
    ///   pattern is empty.
    init(includes patterns: [String], excludes: [String], ownFiles: [String] = [], isDirectory: (String) -> Bool) throws(StreamUpError) {
        guard !patterns.isEmpty else { throw StreamUpError(.invalidConfiguration, "no file or pattern to follow") }
        var includes: [GlobPattern] = []
        for text in patterns {
            let pattern = try GlobPattern(text)
            let namesDirectory = text.hasSuffix("/") || (!pattern.hasWildcards && isDirectory(text))
            includes.append(namesDirectory ? try GlobPattern(Self.stripTrailingSlashes(text) + "/*") : pattern)
        }
        var parsedExcludes: [GlobPattern] = []
        for text in excludes { parsedExcludes.append(try GlobPattern(text)) }
        self.includes = includes
        self.given = patterns
        self.excludes = parsedExcludes
        self.ownFiles = ownFiles.map(Self.absolute)
    }

    /// Whether an exclude pattern matches `path`, or it is one of streamup's own files.
    func isExcluded(_ path: String) -> Bool {
        if !ownFiles.isEmpty, isOwn(Self.absolute(path)) { return true }
        return excludes.contains { pattern in
            guard !pattern.text.contains("/") else { return pattern.matches(path) }
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return pattern.matches(name)
        }
    }

    /// Whether `path` is followed: an include matches it and no exclude does.
    func selects(_ path: String) -> Bool {
        includes.contains { $0.matches(path) } && !isExcluded(path)
    }

    /// Whether the absolute `path` is an own file, inside an own directory, or a file beside
    /// an own file named after it (`.NAME.lock`, `.NAME.PID.RANDOM.tmp`).
    private func isOwn(_ path: String) -> Bool {
        let name = (path as NSString).lastPathComponent
        let directory = (path as NSString).deletingLastPathComponent
        return ownFiles.contains { own in
            path == own || path.hasPrefix(own + "/")
                || (directory == (own as NSString).deletingLastPathComponent && name.hasPrefix("." + (own as NSString).lastPathComponent + "."))
        }
    }

    /// `path` spelled from the root, without `.` and `..` components.
    private static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return (full as NSString).standardizingPath
    }

    private static func stripTrailingSlashes(_ text: String) -> String {
        var text = Substring(text)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }
}
