import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Acknowledged segments are complete bodies: every segment request carries `Content-Length`
/// and no chunked encoding (WSGI servers store a chunked body as nothing, nginx buffers one
/// anyway), and its bytes are exactly the segment's records as the body stages make them.
@Suite(.timeLimit(.minutes(3))) struct CompleteBodyTests {
    /// stdin in the default mode, gzipped, and wrapped by a preset's per-request document
    /// (Elasticsearch `_bulk`): each request's `Content-Length` is the body the sink read, no
    /// request is chunked, and the bodies decode to the input, line for line, in order.
    @Test(arguments: [[], ["--compress", "gzip"], ["--to", "elasticsearch"]])
    func segmentRequestsCarryContentLengthAndAreNotChunked(options: [String]) async throws {
        let lines = (1...2_000).map { "line \($0) of the log" }
        let input = Array(lines.map { $0 + "\n" }.joined().utf8)
        var configuration = SinkConfiguration()
        configuration.keepBodiesInMemory = true
        configuration.recentEventLimit = 10_000
        let sink = try SinkServer(configuration: configuration)
        sink.start()
        defer { sink.stop() }
        let child = try StreamupProcess(options + ["--segment-bytes", "10000", sink.url.absoluteString])
        child.write(Data(input))
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        let requests = sink.requests
        #expect(requests.count > 3, "\(requests.count) requests")
        for request in requests {
            #expect(request.isComplete && request.status == 200)
            #expect(request.headers.first(named: "Content-Length") == String(request.bodyByteCount))
            #expect(request.headers.first(named: "Transfer-Encoding") == nil)
        }
        let bodies = requests.compactMap(\.body)
        #expect(bodies.count == requests.count)
        var decoded: [UInt8] = []
        switch options.first {
        case "--compress":
            for body in bodies {
                let member = try ExternalTool.python("import sys, gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))", input: body)
                #expect(member.status == 0, "\(member.errorText)")
                decoded += member.output
            }
            #expect(decoded == input)
        case "--to":
            // Each body is a `{"create":{"_id":"STREAM-OFFSET"}}` line and a document per record
            // (ids all distinct); the documents' messages, in the order of their ids (several
            // requests are out at once), are the input's lines.
            for body in bodies.sorted(by: { Self.firstOffset($0) < Self.firstOffset($1) }) {
                let messages = try ExternalTool.python(
                    #"""
                    import json, sys
                    lines = sys.stdin.buffer.read().split(b"\n")
                    assert lines[-1] == b"", "the body does not end in a newline"
                    lines = lines[:-1]
                    actions = [json.loads(a) for a in lines[0::2]]
                    assert len(lines) % 2 == 0 and all(list(a) == ["create"] and list(a["create"]) == ["_id"] for a in actions), lines[:2]
                    assert len({a["create"]["_id"] for a in actions}) == len(actions), "an _id twice"
                    for doc in lines[1::2]: print(json.loads(doc)["message"])
                    """#, input: body)
                #expect(messages.status == 0, "\(messages.errorText)")
                decoded += messages.output
            }
            #expect(decoded == input)
        default:
            #expect(bodies.flatMap { $0 } == input)
        }
    }

    /// The stream offset in the first `_id` of a `_bulk` body (`…-OFFSET"}}`); -1 for none.
    static func firstOffset(_ body: [UInt8]) -> Int {
        let line = String(decoding: body.prefix { $0 != 0x0A }, as: UTF8.self)
        guard let match = line.firstMatch(of: /-([0-9]+)"\}\}$/) else { return -1 }
        return Int(match.1) ?? -1
    }
}
