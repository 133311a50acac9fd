import Foundation

/// Runs a program installed on the machine (python3, gzip) with `input` on its stdin and
/// collects its output, through temporary files so no pipe can fill up and stall either side.
///
/// Thread safety: stateless; each call uses files of its own.
public enum ExternalTool {
    public struct Result: Sendable {
        public var status: Int32
        public var output: [UInt8]
        public var errorText: String
    }

    public static func run(_ arguments: [String], input: [UInt8] = []) throws -> Result {
        let temporary = try TemporaryDirectory()
        defer { withExtendedLifetime(temporary) {} }
        let directory = temporary.url
        let inputURL = directory.appendingPathComponent("in")
        let outputURL = directory.appendingPathComponent("out")
        let errorURL = directory.appendingPathComponent("err")
        try Data(input).write(to: inputURL)
        try Data().write(to: outputURL)
        try Data().write(to: errorURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: Array(try Data(contentsOf: outputURL)),
            errorText: String(decoding: try Data(contentsOf: errorURL), as: UTF8.self))
    }

    /// Runs a Python 3 program given as text, with `arguments` in `sys.argv[1:]`, as
    /// `python3 -c PROGRAM ARGUMENTS…` would; in an interpreter that stays up between programs
    /// (``PythonWorker``), or in one of its own when no such interpreter answers.
    public static func python(_ program: String, _ arguments: [String] = [], input: [UInt8] = []) throws -> Result {
        if let result = try? PythonWorker.run(program, arguments, input: input) { return result }
        return try run(["python3", "-c", program] + arguments, input: input)
    }
}
