import Foundation

/// A fresh directory under the system's temporary directory, removed with everything in it
/// when the value is released (keep it in a local for as long as the test uses the directory).
///
/// Thread safety: immutable; the removal runs once, in `deinit`.
public final class TemporaryDirectory: Sendable {
    /// The directory's URL.
    public let url: URL

    /// Creates `streamup-tests-<UUID>` in the temporary directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("streamup-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// The directory's path.
    public var path: String { url.path }

    /// The path of `name` inside the directory (nothing is created).
    public func file(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// The directory's entry names, sorted.
    public func fileNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }
}

/// Runs `body` with the path of a fresh ``TemporaryDirectory``, removed when `body` ends.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { withExtendedLifetime(directory) {} }
    return try await body(directory.path)
}
