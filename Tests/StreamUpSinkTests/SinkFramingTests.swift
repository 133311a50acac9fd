import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// Framing a hostile or confused client may send: transfer codings the sink does not decode,
/// `Transfer-Encoding` on HTTP/1.0, bodies over the configured size, and symbolic links planted
/// in the output directory. Each ends in a clear status and a closed connection, never in
/// bytes stored undecoded, past the limit, or through a link.
@Suite struct SinkFramingTests {
    /// Sends `bytes`, expects `status` with `Connection: close` and a closed connection; returns
    /// the event reported with that status.
    private func expectRejection(
        _ bytes: [UInt8], status: Int, configuration: SinkConfiguration = SinkConfiguration()
    ) throws -> SinkRequestEvent {
        let recorder = EventRecorder<SinkRequestEvent>()
        return try withSink(configuration, recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            try client.send(bytes)
            let response = try client.readResponse()
            #expect(response.status == status, "body: \(response.bodyText)")
            #expect(response.headers["connection"] == "close")
            #expect(try client.readUntilClosed())
            let events = try recorder.wait(for: 1)
            return try #require(events.first { $0.status == status }, "events: \(events)")
        }
    }

    /// `Transfer-Encoding: gzip, chunked` would be stored still gzipped: it is answered 501
    /// (RFC 9112 §6.1: a server SHOULD answer 501 to a transfer coding it does not understand),
    /// and nothing is stored as a complete body.
    @Test func aTransferCodingOtherThanChunkedAnswers501() throws {
        let directory = try TemporaryDirectory()
        let text = uploadHead("Transfer-Encoding: gzip, chunked") + "4\r\nabcd\r\n0\r\n\r\n"
        let event = try expectRejection(
            Array(text.utf8), status: 501, configuration: SinkConfiguration(outputDirectory: directory.path))
        #expect(!event.isComplete)
        #expect(event.failure == "transfer coding 'gzip' is not implemented (only chunked)")
        #expect(try directory.fileNames().allSatisfy { !$0.hasSuffix(".body") })
    }

    /// The codings are checked across repeated fields too.
    @Test func aTransferCodingInASecondFieldAnswers501() throws {
        let text = uploadHead("Transfer-Encoding: deflate", "Transfer-Encoding: chunked") + "0\r\n\r\n"
        let event = try expectRejection(Array(text.utf8), status: 501)
        #expect(event.failure == "transfer coding 'deflate' is not implemented (only chunked)")
    }

    /// `Transfer-Encoding` in an HTTP/1.0 request means faulty framing (RFC 9112 §6.1): 400 and close.
    @Test func transferEncodingInAnHTTP10RequestAnswers400() throws {
        let text = "POST /upload HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n"
        let event = try expectRejection(Array(text.utf8), status: 400)
        #expect(event.failure == "Transfer-Encoding in an HTTP/1.0 request")
    }
}

/// A symbolic link planted in the output directory is never followed: a stream file that is a
/// link is refused with 500, and the file it points to is untouched.
@Suite struct SinkSymlinkTests {
    /// A directory holding `stream-job-1.body` as a link to `victim.txt` in another directory.
    private static func plantLink() throws -> (output: TemporaryDirectory, elsewhere: TemporaryDirectory, victim: String) {
        let output = try TemporaryDirectory()
        let elsewhere = try TemporaryDirectory()
        let victim = "\(elsewhere.path)/victim.txt"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: "\(output.path)/stream-job-1.body", withDestinationPath: victim)
        return (output, elsewhere, victim)
    }

    private static func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    /// A plain request of a de-duplicated stream whose file is a link: 500, nothing written through it.
    @Test func aStreamFileThatIsALinkIsRefused() throws {
        let (output, elsewhere, victim) = try Self.plantLink()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: output.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            // Offset 9 is the victim's length: without the refusal, these bytes would be appended to it.
            try client.send(uploadHead("Content-Length: 5", "Streamup-Stream-Id: job-1", "Streamup-Offset: 9") + "evil\n")
            let response = try client.readResponse()
            #expect(response.status == 500)
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.failure?.contains("symbolic link") == true, "\(event.failure ?? "nil")")
        }
        #expect(try Self.contents(victim) == "precious\n")
        _ = elsewhere
    }

    /// A resumable upload bound to a stream whose file is a link: 500, nothing written through it.
    @Test func aStreamBoundUploadWhoseFileIsALinkIsRefused() throws {
        let (output, elsewhere, victim) = try Self.plantLink()
        let recorder = EventRecorder<SinkRequestEvent>()
        try withSink(SinkConfiguration(outputDirectory: output.path), recorder: recorder) { server in
            let client = try TestClient(port: server.port)
            let head = Resumable.create(
                complete: true, length: 5, extra: ["Streamup-Stream-Id: job-1", "Streamup-Offset: 9"])
            try client.send(head + "evil\n")
            let answer = try client.readFinalResponse()
            #expect(answer.final.status == 500)
            let event = try #require(try recorder.wait(for: 1).first)
            #expect(event.failure?.contains("symbolic link") == true, "\(event.failure ?? "nil")")
        }
        #expect(try Self.contents(victim) == "precious\n")
        _ = elsewhere
    }
}
