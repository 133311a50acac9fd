import Foundation
import StreamUpHTTP
import StreamUpSystem

/// What a producer that follows files has to say about them, for a person: a pattern that
/// matches nothing yet, a directory that does not exist, a file it cannot read, too many files.
/// It arrives as ``UploadEvent/source(_:)`` through the `onEvent` handler given to the
/// producer (`FileTailer`, in StreamUpTail); StreamUp never prints it. ``isNotice`` says which ones a tool
/// should show without being asked (the rest are for a verbose mode).
///
/// Thread safety: a value type.
package enum SourceEvent: Sendable, Equatable, CustomStringConvertible {
    /// No file matches `pattern` yet; it is waited for (said once per pattern, unless
    /// ``directoryMissing(directory:pattern:)`` was said for it).
    case waitingForMatch(pattern: String)
    /// `directory`, which `pattern` needs, does not exist; it is waited for (once per pattern,
    /// instead of ``waitingForMatch(pattern:)``).
    case directoryMissing(directory: String, pattern: String)
    /// A matching path cannot be followed (`reason`: permission denied, not a regular file, …).
    /// It is skipped and the other files go on; it is tried again when it changes (said once
    /// per path).
    case skipped(path: String, reason: String)
    /// `count` files are followed, more than `limit` may be open at once: the least recently
    /// written are closed and wait until they are written to again (said each time the count
    /// goes over the limit).
    case tooManyFiles(count: Int, limit: Int)
    /// The system refused another open file (`reason`: EMFILE, ENFILE): `path` waits until a
    /// file is closed.
    case outOfDescriptors(path: String, reason: String)
    /// inotify refused a watch on `path` (`reason`: the `fs.inotify.max_user_watches` limit,
    /// which it then names, or the system's words such as "Permission denied"): it is checked
    /// every 250 ms instead.
    case unwatched(path: String, reason: String)
    /// `path` was finished (rotated away or deleted, then read to its end) with `bytes` after
    /// its last newline: they were sent as a line of their own, with a newline added.
    case unterminatedLine(path: String, bytes: Int)
    /// Following `path` from byte `offset` (a file found at start, or one that appeared).
    case following(path: String, offset: Int64)
    /// Done with `path` (rotated away or deleted, and read to its end): closed and dropped.
    case finished(path: String)
    /// `path` became shorter than what was read (copytruncate): read again from its start.
    case truncated(path: String)
    /// `path` starts with the bytes of the followed file `original` and holds only its bytes
    /// (copytruncate's copy, or a `cp`): nothing of it is read while `original` goes on.
    case copy(path: String, of: String)
    /// `path` was truncated before its bytes from `offset` on were read: they are read from its
    /// copy `copy` (up to the copy's end), then `path` from its start.
    case readingCopy(path: String, copy: String, offset: Int64)

    /// Whether a tool should show it without a verbose mode.
    package var isNotice: Bool {
        switch self {
        case .waitingForMatch, .directoryMissing, .skipped, .tooManyFiles, .outOfDescriptors, .unwatched, .unterminatedLine:
            true
        case .following, .finished, .truncated, .copy, .readingCopy:
            false
        }
    }

    package var description: String {
        switch self {
        case .waitingForMatch(let pattern):
            "waiting for \(pattern): no file matches it yet"
        case .directoryMissing(let directory, let pattern):
            pattern.hasSuffix(directory) || PathComponents(pattern).directory == directory
                ? "the directory \(directory) does not exist (yet); waiting for it to appear"
                : "the directory \(directory) does not exist (yet); waiting for it to appear (for \(pattern))"
        case .skipped(let path, let reason):
            "cannot read \(path): \(reason); skipping it (the other files go on)"
        case .tooManyFiles(let count, let limit):
            "\(count) files to follow, more than --max-open-files \(limit): the least recently written are closed and wait until they are written to again"
        case .outOfDescriptors(let path, let reason):
            "cannot open \(path): \(reason); it waits until another file is closed (raise `ulimit -n` or lower --max-open-files)"
        case .unwatched(let path, let reason):
            "cannot watch \(path) with inotify: \(reason); checking it every 250 ms instead"
        case .unterminatedLine(let path, let bytes):
            "\(path) ended without a newline: its last \(counted(bytes, "byte")) \(bytes == 1 ? "was" : "were") sent as a line of their own"
        case .following(let path, let offset):
            offset == 0 ? "following \(path) from its start" : "following \(path) from byte \(offset)"
        case .finished(let path):
            "done with \(path): it was rotated away or deleted and is read to its end"
        case .truncated(let path):
            "\(path) was truncated: reading it again from its start"
        case .copy(let path, let original):
            "\(path) is a copy of \(original): its lines were sent from \(original) (what \(original) has not sent when it is truncated will be read from it)"
        case .readingCopy(let path, let copy, let offset):
            "reading what \(path) had not sent when it was truncated from its copy \(copy), from byte \(offset)"
        }
    }

    /// The system's words for `errno` (`strerror(3)`), e.g. "Permission denied".
    package static func words(errno: Int32) -> String {
        String(cString: strerror(errno))
    }
}
