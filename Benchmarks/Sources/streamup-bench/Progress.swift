import Foundation

/// Progress lines on stderr, so stdout carries only the Markdown report.
///
/// Thread safety: `FileHandle` writes are atomic per call; callable from any thread.
enum Progress {
    static func log(_ line: String) {
        FileHandle.standardError.write(Data("[bench] \(line)\n".utf8))
    }

    /// One line on stderr, without the `[bench]` prefix (the bare uploader's errors).
    static func error(_ line: String) {
        FileHandle.standardError.write(Data("streamup-bench: \(line)\n".utf8))
    }
}
