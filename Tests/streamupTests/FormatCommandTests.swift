import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Record framing and compression through the built binary: every record parses, every
/// message round-trips byte for byte, and gzip bodies decode to the records with Python's own
/// decoder, in acknowledged segments and as one live request.
@Suite(.timeLimit(.minutes(2))) struct FormatCommandTests {
    /// Lines with invalid UTF-8, control characters, quotes and backslashes: each becomes one
    /// JSON object with the configured keys and fields; by default its message is the line with
    /// U+FFFD for each ill-formed sequence (valid Unicode), and with `--format
    /// ndjson,surrogateescape` it decodes (PEP 383) to exactly the line's bytes.
    @Test(arguments: [false, true]) func ndjsonRecordsCarryEveryLine(surrogateEscape: Bool) async throws {
        var lines: [[UInt8]] = [
            Array("plain text".utf8), Array("quote \" and backslash \\".utf8), [0x09, 0x01, 0x0D, 0x1F, 0x7F],
            [0xFF, 0xFE, 0x80], [0xC3], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], Array("ünïcödé ✓".utf8), [],
        ]
        lines.append((0...255).map { UInt8($0) }.filter { $0 != 0x0A })
        let input: [UInt8] = lines.reduce(into: []) { $0 += $1 + [0x0A] }
        let stored = try await stream(
            [
                "--format", surrogateEscape ? "ndjson,surrogateescape" : "ndjson", "--field", "env=prod", "--message-key", "_msg", "--time-key", "_time",
            ], input: input)
        let check = try ExternalTool.python(
            #"""
            import json, re, sys
            expected = [bytes.fromhex(h) for h in sys.argv[2:]]
            records = [json.loads(line) for line in sys.stdin.buffer.read().split(b"\n") if line]
            assert len(records) == len(expected), (len(records), len(expected))
            for record, line in zip(records, expected):
                if sys.argv[1] == "escape":
                    assert record["_msg"].encode("utf-8", "surrogateescape") == line, (record, line)
                else:
                    assert record["_msg"] == line.decode("utf-8", "replace"), (record, line)
                assert record["env"] == "prod" and record["host"]
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["_time"]), record["_time"]
            print("ok")
            """#, [surrogateEscape ? "escape" : "replace"] + lines.map { $0.map { String(format: "%02x", $0) }.joined() }, input: stored)
        #expect(check.status == 0 && check.output == [UInt8]("ok\n".utf8), "\(check.errorText)")
    }

    /// `--format json`: lines that are JSON objects get the fields merged in (their own keys
    /// win); other lines are wrapped.
    @Test func jsonMergesFieldsIntoObjectLines() async throws {
        let input = Array(#"{"level":"info","env":"mine"}"#.utf8) + [0x0A] + Array("not json".utf8) + [0x0A]
        let stored = try await stream(["--format", "json", "--field", "env=prod", "--field", "team=ops"], input: input)
        let check = try ExternalTool.python(
            #"""
            import json, sys
            first, second = [json.loads(l) for l in sys.stdin.buffer.read().split(b"\n") if l]
            assert first["level"] == "info" and first["env"] == "mine" and first["team"] == "ops", first
            assert second["message"] == "not json" and second["env"] == "prod", second
            print("ok")
            """#, input: stored)
        #expect(check.status == 0, "\(check.errorText)")
    }

    /// `--compress gzip` in acknowledged segments: every request is one complete gzip member,
    /// and the members in order decode to the input.
    @Test func gzipSegmentsDecodeToTheInput() async throws {
        let input = Array((1...50_000).map { "line \($0) of the log\n" }.joined().utf8)
        var configuration = SinkConfiguration()
        configuration.keepBodiesInMemory = true
        configuration.recentEventLimit = 10_000
        let sink = try SinkServer(configuration: configuration)
        sink.start()
        defer { sink.stop() }
        let child = try StreamupProcess(["--compress", "gzip", "--segment-bytes", "100000", sink.url.absoluteString])
        child.write(Data(input))
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        let requests = sink.requests
        #expect(requests.count > 5 && requests.allSatisfy { $0.headers.first(named: "Content-Encoding") == "gzip" })
        var decoded: [UInt8] = []
        for body in requests.compactMap(\.body) {
            let member = try ExternalTool.python("import sys, gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))", input: [UInt8](body))
            #expect(member.status == 0, "\(member.errorText)")
            #expect(member.output.last == 0x0A, "a request did not end on a line")
            decoded += member.output
        }
        #expect(decoded == input)
    }

    /// `--compress gzip` as one live request: a line written while the request stays open is
    /// decodable at the receiver (the stream is flushed when it would wait), and the whole
    /// body decodes to the input once it ends.
    @Test func aLiveGzipRequestIsDecodableAsItGoes() async throws {
        try await withSink { sink, directory in
            let child = try StreamupProcess(["--single-request", "--compress", "gzip", sink.url.absoluteString])
            child.write("the first line\n")
            let decodedSoFar = {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                guard let partial = names.first(where: { $0.hasSuffix(".partial") }),
                    let bytes = try? Data(contentsOf: directory.appendingPathComponent(partial))
                else { return "" }
                let result = try? ExternalTool.python(
                    "import sys, zlib; d = zlib.decompressobj(31); sys.stdout.buffer.write(d.decompress(sys.stdin.buffer.read()))",
                    input: [UInt8](bytes))
                return String(decoding: result?.output ?? [], as: UTF8.self)
            }
            #expect(await eventually { decodedSoFar() == "the first line\n" }, "the line never became decodable while the body stayed open")
            child.write("the second line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let body = try Data(contentsOf: URL(fileURLWithPath: try #require(sink.requests.last?.storedFile)))
            let whole = try ExternalTool.python("import sys, gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))", input: [UInt8](body))
            #expect(String(decoding: whole.output, as: UTF8.self) == "the first line\nthe second line\n")
        }
    }
}

/// Streams `input` with `options` to a sink and returns the merged stream it stored.
private func stream(_ options: [String], input: [UInt8]) async throws -> [UInt8] {
    try await withSink { sink, directory in
        let child = try StreamupProcess(options + [sink.url.absoluteString])
        child.write(Data(input))
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        return Array(try Data(contentsOf: URL(fileURLWithPath: try #require(streamFile(in: directory)))))
    }
}
