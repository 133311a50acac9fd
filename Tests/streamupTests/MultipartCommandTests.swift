import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// `--multipart` and `--form` through the built binary: every request the sink stores parses
/// as `multipart/form-data` with Python's `email` parser (an implementation independent of
/// ours), with the text fields first and a file part holding exactly that request's records.
@Suite(.serialized, .timeLimit(.minutes(2))) struct MultipartCommandTests {
    /// One part, as Python's parser sees it.
    struct Part: Decodable, Equatable {
        var name: String
        var filename: String?
        var type: String
        var data: String
    }

    /// What Python made of one request body.
    struct Parsed: Decodable {
        var parts: [Part]
        /// How often the boundary occurs in the body: once per delimiter (parts + 1) if it
        /// occurs nowhere else.
        var boundaryCount: Int
        var defects: [String]
    }

    private static let parser = #"""
        import base64, email, email.policy, json, sys
        content_type, path = sys.argv[1], sys.argv[2]
        body = open(path, "rb").read()
        message = email.message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body, policy=email.policy.HTTP)
        boundary = message.get_boundary().encode()
        parts = []
        for part in message.iter_parts():
            parts.append({
                "name": part.get_param("name", header="content-disposition"),
                "filename": part.get_filename(),
                "type": part.get_content_type(),
                "data": base64.b64encode(part.get_payload(decode=True)).decode(),
            })
        defects = [str(d) for d in message.defects] + [str(d) for p in message.iter_parts() for d in p.defects]
        print(json.dumps({"parts": parts, "boundaryCount": body.count(boundary), "defects": defects}))
        """#

    /// Parses a stored request body with Python's `email` package.
    private func parse(_ event: SinkRequestEvent) async throws -> Parsed {
        let contentType = try #require(event.headers.first(named: "Content-Type"))
        let path = try #require(event.storedFile)
        let child = try StreamupProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.parser, contentType, path])
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "python: \(child.stderr)")
        return try JSONDecoder().decode(Parsed.self, from: Data(child.stdout.utf8))
    }

    private func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    /// Lines in two acknowledged segments (and, with --single-request, one request): each
    /// request is a form with the `--form` fields in order, then the file part named as asked,
    /// typed by --content-type, holding exactly that request's lines; the boundary occurs only
    /// as the delimiters. Together the file parts hold every line once.
    @Test(arguments: [[], ["--single-request"]])
    func everyRequestIsAFormHoldingItsRecords(mode: [String]) async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(
                mode + [
                    "--multipart", "upload=app.log", "--form", "service=web", "--form", "note=a=b", "--content-type", "text/plain",
                    sink.url.absoluteString + "upload",
                ])
            let first = "line one\nline two with --dashes-- and \"quotes\"\n"
            child.write(first)
            if mode.isEmpty {
                // Given the first segment acknowledged, the next line goes in a second request.
                #expect(await eventually { sink.requests.count == 1 && sink.requests[0].status == 200 })
            }
            let second = "line three\r\n"
            child.write(second)
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let requests = sink.requests
            #expect(requests.count == (mode.isEmpty ? 2 : 1))
            var files = ""
            for request in requests {
                #expect(request.headers.first(named: "Content-Type")?.hasPrefix("multipart/form-data; boundary=streamup-") == true)
                let parsed = try await parse(request)
                #expect(parsed.defects.isEmpty, "\(parsed.defects)")
                #expect(parsed.parts.count == 3)
                #expect(parsed.boundaryCount == parsed.parts.count + 1)
                guard parsed.parts.count == 3 else { continue }
                #expect(parsed.parts[0] == Part(name: "service", filename: nil, type: "text/plain", data: base64("web")))
                #expect(parsed.parts[1] == Part(name: "note", filename: nil, type: "text/plain", data: base64("a=b")))
                #expect(parsed.parts[2].name == "upload" && parsed.parts[2].filename == "app.log" && parsed.parts[2].type == "text/plain")
                files += String(decoding: Data(base64Encoded: parsed.parts[2].data) ?? Data(), as: UTF8.self)
            }
            #expect(files == first + second)
            if mode.isEmpty {
                let parsed = try await parse(requests[0])
                #expect(parsed.parts.last?.data == base64(first))
            }
        }
    }

    /// `--format ndjson` records in a form: the file part is typed application/x-ndjson and
    /// holds one JSON object per line; the default file name is `stream`.
    @Test func ndjsonRecordsGoInTheFilePart() async throws {
        try await withSink { sink, _ in
            let child = try StreamupProcess(["--multipart", "file", "--format", "ndjson", "--time-key", "none", "--single-request", sink.url.absoluteString])
            child.write("hello\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let parsed = try await parse(try #require(sink.requests.last))
            #expect(parsed.parts.count == 1)
            let part = try #require(parsed.parts.first)
            #expect(part.name == "file" && part.filename == "stream" && part.type == "application/x-ndjson")
            let text = String(decoding: Data(base64Encoded: part.data) ?? Data(), as: UTF8.self)
            #expect(text.hasSuffix("\"message\":\"hello\"}\n"), "\(text)")
        }
    }

    /// Forms need their options together: a usage error names what is missing or in conflict.
    @Test(arguments: [
        (["--form", "a=b"], "streamup: --form adds a field to a multipart form: add --multipart FIELD\n"),
        (["--multipart", "f", "--resumable"], "streamup: --multipart cannot go with --resumable: the upload's parts would not add up to one form\n"),
        (
            ["--multipart", "f", "-H", "Content-Type: text/plain"],
            "streamup: --multipart sets the request's Content-Type (multipart/form-data); --content-type sets the file part's\n"
        ),
        (["--multipart", "=x"], "streamup: --multipart: '=x' has no field name (FIELD[=FILENAME])\n"),
    ])
    func formOptionsAreChecked(arguments: [String], message: String) async throws {
        let child = try StreamupProcess(arguments + ["http://127.0.0.1:9/"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == message)
    }
}
