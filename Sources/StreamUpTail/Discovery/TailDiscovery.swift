import StreamUp
import StreamUpSystem

/// Walks the file system for a `PathSelection`: lists only the directories a pattern can
/// reach (a literal component is looked up, not listed), follows `**` into subdirectories
/// that are not hidden (each directory once, so symbolic-link loops end), and records every
/// directory it looked into so that a ``TailWatcher`` can watch it for names that appear.
///
/// Paths are spelled as the pattern spells them: `logs/*.log` finds `logs/a.log`, an absolute
/// pattern finds absolute paths. Symbolic links to files are followed (`stat(2)`).
///
/// Thread safety: stateless; callable from any thread.
enum TailDiscovery {
    /// One walk of everything `selection` includes.
    static func scan(_ selection: PathSelection) -> TailScan {
        var scan = TailScan()
        var seen: Set<FileIdentity> = []
        for (index, pattern) in selection.includes.enumerated() {
            var walk = Walk(pattern: pattern, index: index, selection: selection)
            walk.walk(directory: pattern.isAbsolute ? "/" : "", component: 0)
            scan.matches[index] = walk.found.count
            for found in walk.found.sorted(by: { $0.path < $1.path }) where seen.insert(found.status.identity).inserted {
                scan.files.append(found)
            }
            scan.skipped += walk.skipped
            for (directory, interest) in walk.directories {
                var merged = scan.directories[directory] ?? TailScan.Interest()
                merged.components += interest.components
                merged.anyName = merged.anyName || interest.anyName
                scan.directories[directory] = merged
            }
            if walk.missingStaticDirectory { scan.missingDirectories[index] = Self.staticDirectory(of: pattern) }
            if walk.blockedStaticPath { scan.blocked.insert(index) }
        }
        scan.files.sort { $0.path < $1.path }
        return scan
    }

    /// The directory part of `pattern` before its first wildcard (for "does not exist").
    static func staticDirectory(of pattern: GlobPattern) -> String {
        var names: [String] = []
        for component in pattern.components.dropLast() {
            guard case .literal(let name) = component else { break }
            names.append(name)
        }
        let joined = names.joined(separator: "/")
        return pattern.isAbsolute ? "/" + joined : (joined.isEmpty ? "." : joined)
    }

    /// The walk of one include pattern.
    ///
    /// Thread safety: a value type used by one call.
    private struct Walk {
        let pattern: GlobPattern
        let index: Int
        let selection: PathSelection
        var found: [TailScan.Found] = []
        var skipped: [(path: String, reason: String)] = []
        var directories: [String: TailScan.Interest] = [:]
        var visited: Set<FileIdentity> = []
        /// Whether a directory of the literal start of the pattern is missing.
        var missingStaticDirectory = false
        /// Whether a path of the literal start of the pattern cannot be looked at (permissions).
        var blockedStaticPath = false

        init(pattern: GlobPattern, index: Int, selection: PathSelection) {
            self.pattern = pattern
            self.index = index
            self.selection = selection
        }

        /// Looks for matches of the components from `component` on, inside `directory` (as
        /// spelled in results: "" for the current directory of a relative pattern).
        mutating func walk(directory: String, component: Int) {
            let components = pattern.components
            guard component < components.count else { return }
            let current = components[component]
            let isLast = component == components.count - 1
            let opened = directory.isEmpty ? "." : directory
            note(opened, current)
            switch current {
            case .literal(let name):
                let child = Self.join(directory, name)
                if isLast {
                    consider(child)
                } else {
                    switch Self.status(child) {
                    case .success(.some(let status)) where status.isDirectory:
                        walk(directory: child, component: component + 1)
                    case .success(.none):
                        if Self.isStatic(components, upTo: component) { missingStaticDirectory = true }
                    case .failure(let error):
                        // There but not to be looked into (a parent without search permission):
                        // said as such, never as "does not exist".
                        skipped.append((child, Self.reason(error)))
                        if Self.isStatic(components, upTo: component) { blockedStaticPath = true }
                    case .success(.some):
                        break
                    }
                }
            case .wildcard, .anyDirectories:
                guard let entries = list(opened) else { return }
                if current == .anyDirectories {
                    guard let status = try? FileStatus.of(path: opened, throwing: StreamUpError.self), visited.insert(status.identity).inserted else { return }
                    // `**` standing for no directory at all, or for one more (then still `**`).
                    if isLast {
                        for entry in entries where !entry.name.hasPrefix(".") { considerOrDescend(directory, entry, component) }
                    } else {
                        walk(directory: directory, component: component + 1)
                        for entry in entries where GlobPattern.matches(current, name: entry.name) && Self.isDirectory(Self.join(directory, entry.name), entry) {
                            walk(directory: Self.join(directory, entry.name), component: component)
                        }
                    }
                    return
                }
                for entry in entries where GlobPattern.matches(current, name: entry.name) {
                    let child = Self.join(directory, entry.name)
                    if isLast {
                        consider(child)
                    } else if Self.isDirectory(child, entry) {
                        walk(directory: child, component: component + 1)
                    }
                }
            }
        }

        /// For a pattern ending in `**`: a file is a match, a directory is walked.
        private mutating func considerOrDescend(_ directory: String, _ entry: DirectoryListing.Entry, _ component: Int) {
            let child = Self.join(directory, entry.name)
            if Self.isDirectory(child, entry) {
                walk(directory: child, component: component)
            } else {
                consider(child)
            }
        }

        private mutating func note(_ directory: String, _ component: GlobPattern.Component) {
            var interest = directories[directory] ?? TailScan.Interest()
            if component == .anyDirectories {
                interest.anyName = true
            } else {
                interest.components.append(component)
            }
            directories[directory] = interest
        }

        private mutating func list(_ directory: String) -> [DirectoryListing.Entry]? {
            do {
                return try DirectoryListing.entries(of: directory, throwing: StreamUpError.self)
            } catch {
                skipped.append((directory, Self.reason(error)))
                return nil
            }
        }

        /// A path a pattern matched: kept when it is a regular file that is not excluded.
        private mutating func consider(_ path: String) {
            guard !selection.isExcluded(path) else { return }
            do {
                guard let status = try FileStatus.of(path: path, throwing: StreamUpError.self) else { return }
                if status.isRegularFile {
                    found.append(TailScan.Found(path: path, status: status))
                } else if !status.isDirectory {
                    skipped.append((path, "not a regular file"))
                }
            } catch {
                skipped.append((path, Self.reason(error)))
                if Self.isStatic(pattern.components, upTo: pattern.components.count - 1) { blockedStaticPath = true }
            }
        }

        /// `stat(2)` of `path` (nil: not there), or why it failed otherwise (EACCES, ELOOP, …).
        private static func status(_ path: String) -> Result<FileStatus?, StreamUpError> {
            Result { () throws(StreamUpError) in try FileStatus.of(path: path, throwing: StreamUpError.self) }
        }

        private static func isDirectory(_ path: String, _ entry: DirectoryListing.Entry) -> Bool {
            switch entry.kind {
            case .directory: return true
            case .regularFile, .other: return false
            case .symbolicLink, .unknown: return ((try? FileStatus.of(path: path, throwing: StreamUpError.self)) ?? nil)?.isDirectory ?? false
            }
        }

        private static func isStatic(_ components: [GlobPattern.Component], upTo index: Int) -> Bool {
            components[...index].allSatisfy { if case .literal = $0 { true } else { false } }
        }

        private static func join(_ directory: String, _ name: String) -> String {
            directory.isEmpty ? name : DirectoryListing.path(directory, name)
        }

        private static func reason(_ error: any Error) -> String {
            guard let error = error as? StreamUpError, let errno = error.errno else { return "\(error)" }
            return SourceEvent.words(errno: errno)
        }
    }
}
