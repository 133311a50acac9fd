import Foundation
import StreamUpTestSupport

@testable import StreamUpSink

/// Runs `body` against a started server and always stops it.
func withSink<Value>(
    _ configuration: SinkConfiguration = SinkConfiguration(),
    recorder: EventRecorder<SinkRequestEvent>? = nil,
    _ body: (SinkServer) throws -> Value
) throws -> Value {
    var handler: @Sendable (SinkRequestEvent) -> Void = { _ in }
    if let recorder {
        handler = recorder.handler
    }
    let server = try SinkServer(configuration: configuration, onEvent: handler)
    server.start()
    defer { server.stop() }
    return try body(server)
}

/// The SHA-256 of a file's contents, in hex (with the sink's own hasher).
func sha256OfFile(_ path: String) throws -> String {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return SHA256.hex(SHA256.hash(Array(data)))
}

/// The hex SHA-256 of `bytes`.
func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hex(SHA256.hash(bytes))
}

/// A head for an upload to `path` with the given framing headers.
func uploadHead(method: String = "POST", path: String = "/upload", _ extraHeaders: String...) -> String {
    "\(method) \(path) HTTP/1.1\r\nHost: sink\r\n" + extraHeaders.map { $0 + "\r\n" }.joined() + "\r\n"
}
