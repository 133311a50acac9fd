import StreamUp
import StreamUpSystem

/// What one walk of the file system found for a ``PathSelection`` (see ``TailDiscovery``).
/// What one walk of the file system found for a `PathSelection` (see `TailDiscovery`).
///
/// Thread safety: a value type.
struct TailScan {
    /// A regular file a pattern selects, at the path it was found by.
    ///
    /// Thread safety: a value type.
    struct Found: Equatable {
        let path: String
        let status: FileStatus
    }

    /// Which names in a watched directory can change what is selected.
    ///
    /// Thread safety: a value type.
    struct Interest: Equatable {
        /// The pattern components that apply to the directory's entries.
        var components: [GlobPattern.Component] = []
        /// Whether any name matters (a `**` level: any new subdirectory may hold matches).
        var anyName = false

        /// Whether an entry called `name` appearing or going away can change the selection.
        func concerns(_ name: String) -> Bool {
            anyName || components.contains { GlobPattern.matches($0, name: name) }
        }
    }

    /// Selected regular files, by path; a file reachable by two paths appears once (at the
    /// first in path order).
    var files: [Found] = []
    /// Matches that cannot be followed, with why: not regular files, or directories that
    /// cannot be read.
    var skipped: [(path: String, reason: String)] = []
    /// The directories to watch (as they are opened: `.` for the current one) and what in
    /// them matters.
    var directories: [String: Interest] = [:]
    /// For each include (by index), the directory it needs that does not exist.
    var missingDirectories: [Int: String] = [:]
    /// The includes (by index) whose literal start cannot be looked into (a directory on the
    /// way without search permission): ``skipped`` says why, so nothing is said of a match.
    var blocked: Set<Int> = []
    /// For each include (by index), how many files it selected.
    var matches: [Int: Int] = [:]
}
