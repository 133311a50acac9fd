import Foundation

/// Where the CLI's diagnostics go: stderr, one line at a time. stdout carries only what a
/// command was asked to print.
///
/// Thread safety: `FileHandle` writes are atomic per call; callable from any thread.
enum Terminal {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data("streamup: \(line)\n".utf8))
    }

    static func info(_ line: String) {
        FileHandle.standardError.write(Data("\(line)\n".utf8))
    }

    static func output(_ line: String) {
        FileHandle.standardOutput.write(Data("\(line)\n".utf8))
    }
}

/// Exit statuses, as `--help` lists them.
///
/// Thread safety: constants.
enum ExitStatus {
    static let success: Int32 = 0
    static let httpFailure: Int32 = 1
    static let noAnswer: Int32 = 2
    static let usage: Int32 = 64
    static let interrupted: Int32 = 130
}
