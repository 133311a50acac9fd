/// A path split into its directory and its last component, the way the follower watches it:
/// inotify watches the directory and filters its events by the name.
///
/// `"/var/log/app.log"` gives `"/var/log"` and `"app.log"`; `"app.log"` gives `"."`;
/// `"/app.log"` gives `"/"`. Trailing slashes are not stripped (a followed path names a file).
///
/// Thread safety: a value type that is never shared.
package struct PathComponents: Sendable, Equatable {
    /// The directory holding the name; `"."` for a bare name.
    package let directory: String
    /// The last component.
    package let name: String

    package init(_ path: String) {
        guard let slash = path.lastIndex(of: "/") else {
            directory = "."
            name = path
            return
        }
        let parent = path[..<slash]
        directory = parent.isEmpty ? "/" : String(parent)
        name = String(path[path.index(after: slash)...])
    }
}
