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
/// Pure apart from the `isDirectory` question asked once per include at creation.
///
/// Thread safety: a value type.
struct PathSelection: Sendable, Equatable {
    /// The include patterns, with directories expanded to `DIR/*`.
    let includes: [GlobPattern]
    /// The patterns as given, parallel to ``includes`` (for messages).
    let given: [String]
    let excludes: [GlobPattern]

    /// - Throws: ``StreamUpError`` `.invalidConfiguration` when there is no include or a
    ///   pattern is empty.
    init(includes patterns: [String], excludes: [String], isDirectory: (String) -> Bool) throws(StreamUpError) {
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
    }

    /// Whether an exclude pattern matches `path`.
    func isExcluded(_ path: String) -> Bool {
        excludes.contains { pattern in
            guard !pattern.text.contains("/") else { return pattern.matches(path) }
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return pattern.matches(name)
        }
    }

    /// Whether `path` is followed: an include matches it and no exclude does.
    func selects(_ path: String) -> Bool {
        includes.contains { $0.matches(path) } && !isExcluded(path)
    }

    private static func stripTrailingSlashes(_ text: String) -> String {
        var text = Substring(text)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }
}
