import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// A sink on 127.0.0.1 port 0 for one test, storing bodies in a fresh temporary directory.
/// Always stopped by the test (see ``withSink(_:)``).
func withSink<T>(
    configure: (inout SinkConfiguration) -> Void = { _ in }, _ body: (SinkServer, URL) async throws -> T
) async throws -> T {
    let scratch = try TemporaryDirectory()
    let directory = scratch.url
    var configuration = SinkConfiguration()
    configuration.outputDirectory = directory.path
    configure(&configuration)
    let server = try SinkServer(configuration: configuration)
    server.start()
    defer { server.stop() }
    return try await body(server, directory)
}

/// A temporary file of `count` random bytes; returns its path and SHA-256 (computed by the
/// system's `sha256sum`, independently of the sink's own hashing).
func randomFile(bytes count: Int) async throws -> (path: String, sha256: String) {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("streamup-input-\(UUID().uuidString)").path
    _ = try await run("/bin/sh", ["-c", "head -c \(count) /dev/urandom > '\(path)'"])
    return (path, try await sha256sum(path))
}

/// SHA-256 of a file by `sha256sum`.
func sha256sum(_ path: String) async throws -> String {
    let output = try await run("/usr/bin/env", ["sha256sum", path])
    return String(String(decoding: output, as: UTF8.self).prefix(64))
}

/// Runs a program to its end and returns its stdout. The wait blocks a thread of its own,
/// never one of the few cooperative threads that the tests running in parallel share.
private func run(_ executable: String, _ arguments: [String]) async throws -> Data {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardOutput = pipe
            do {
                try process.run()
                let output = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: output)
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// Appends `text` to the file at `path`, as a logging program would.
func append(_ text: String, to path: String) throws {
    guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileNoSuchFile) }
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(text.utf8))
    try handle.close()
}

/// The sink's merged stream file in `directory` (`stream-ID.body`), if there is one yet.
func streamFile(in directory: URL) -> String? {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.first { $0.hasPrefix("stream-") && $0.hasSuffix(".body") }.map { directory.appendingPathComponent($0).path }
}

/// The merged stream file's contents as text.
func streamText(in directory: URL) -> String? {
    streamFile(in: directory).flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
}

/// A sink on `port` storing in `directory`, started (the caller stops it).
func startedSink(port: UInt16, storingIn directory: URL) throws -> SinkServer {
    let sink = try SinkServer(configuration: SinkConfiguration(port: port, outputDirectory: directory.path))
    sink.start()
    return sink
}

/// A sink that goes away mid-stream and comes back: lines go to `streamup OPTIONS URL`; once
/// they are stored the sink stops, more lines come while it is down, a sink starts again on the
/// same port, and the input ends. Expects exit 0 and every line stored once; returns what the
/// restarted sink saw.
func expectNothingLostAcrossASinkRestart(_ options: [String]) async throws -> [SinkRequestEvent] {
    let scratch = try TemporaryDirectory()
    let directory = scratch.url
    let first = try startedSink(port: 0, storingIn: directory)
    let child = try StreamupProcess(options + [first.url.absoluteString])
    var expected = ""
    for index in 0..<5 {
        let line = "before \(index)\n"
        child.write(line)
        expected += line
    }
    // Given the first lines acknowledged, the sink stops.
    #expect(await eventually { streamText(in: directory) == expected })
    first.stop()
    for index in 0..<5 {
        let line = "while down \(index)\n"
        child.write(line)
        expected += line
    }
    // When it is back on the same port, the rest arrives, once.
    let second = try startedSink(port: first.port, storingIn: directory)
    defer { second.stop() }
    child.write("after\n")
    expected += "after\n"
    child.closeStdin()
    #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
    #expect(streamText(in: directory) == expected)
    return second.requests
}
