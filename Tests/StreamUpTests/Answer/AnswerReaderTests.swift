import Foundation
import Testing

@testable import StreamUp

/// The receivers' partial-failure answers, read as their documentation writes them (the pages
/// are cited in each reader's file): which records were refused, where processing stopped, and
/// when the answer cannot say which.
@Suite struct AnswerReaderTests {
    private func response(_ status: Int, _ body: String) -> UploadResponse {
        UploadResponse(statusCode: status, headers: [:], body: Data(body.utf8), bytesSent: 0)
    }

    private func records(_ count: Int) -> () -> [[UInt8]] {
        { (0..<count).map { Array(#"{"n":\#($0)}"#.utf8) } }
    }

    // MARK: Elasticsearch

    private func bulk(_ statuses: [Int]) -> String {
        let items = statuses.map { status in
            status < 300
                ? #"{"create":{"_index":"logs","_id":"x","status":\#(status)}}"#
                : #"{"create":{"_index":"logs","status":\#(status),"error":{"type":"document_parsing_exception","reason":"failed to parse field [n]"}}}"#
        }
        let errors = statuses.contains { $0 >= 300 }
        return #"{"took":3,"errors":\#(errors),"items":[\#(items.joined(separator: ","))]}"#
    }

    /// `errors:false` says nothing; items that failed with a 4xx are refused, by position.
    @Test func elasticsearchItemsThatFailedAreRefusedByPosition() {
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(200, bulk([201, 201])), records: records(2)) == nil)
        let failure = AnswerReader.elasticsearchBulk.partialFailure(in: response(200, bulk([201, 400, 201, 409])), records: records(4))
        #expect(failure?.rejected.map(\.index) == [1, 3])
        #expect(failure?.rejected.first?.reason == "400 document_parsing_exception: failed to parse field [n]")
        #expect(failure?.unprocessedFrom == nil && failure?.backoff == false)
        #expect(failure?.summary.hasPrefix("Elasticsearch refused 2 of 4 documents") == true)
    }

    /// An item answered 409 `version_conflict_engine_exception` names a document (`_id`: its
    /// stream and offset) that an earlier request stored, one whose answer was lost: delivered.
    @Test func elasticsearchDocumentsThatExistAreDelivered() {
        let conflict =
            #"{"create":{"_index":"logs","_id":"s-7","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[s-7]: version conflict, document already exists (current version [1])"}}}"#
        let created = #"{"create":{"_index":"logs","_id":"s-20","status":201}}"#
        let answer = #"{"took":1,"errors":true,"items":[\#(conflict),\#(created),\#(conflict)]}"#
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(200, answer), records: records(3)) == nil)
        let refused = #"{"took":1,"errors":true,"items":[\#(conflict),"# + bulk([400]).split(separator: "[", maxSplits: 1)[1]
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(200, refused), records: records(2))?.rejected.map(\.index) == [1])
    }

    /// An item answered 429 (a full write queue) was not indexed for now: from it on the
    /// documents go again after a backoff; refusals after it are left to that resend.
    @Test func elasticsearchOverloadedItemsAreSentAgain() {
        let failure = AnswerReader.elasticsearchBulk.partialFailure(in: response(200, bulk([201, 400, 429, 201, 400])), records: records(5))
        #expect(failure?.rejected.map(\.index) == [1])
        #expect(failure?.unprocessedFrom == 2 && failure?.backoff == true)
    }

    /// Items that do not line up with the documents, or an answer cut short, cannot be placed.
    @Test func elasticsearchItemsThatCannotBePlacedKeepTheWholeRequest() {
        let mismatch = AnswerReader.elasticsearchBulk.partialFailure(in: response(200, bulk([201, 400])), records: records(3))
        #expect(mismatch?.rejected.isEmpty == true && mismatch?.unidentified == 1)
        let cut = String(bulk([201, 400, 201]).dropLast(30))
        let unreadable = AnswerReader.elasticsearchBulk.partialFailure(in: response(200, cut), records: records(3))
        #expect(unreadable?.unidentified == 1 && unreadable?.summary.contains("too long to read") == true)
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(400, bulk([400])), records: records(1)) == nil)
    }

    /// `errors:false` is read from the head: an answer cut at the response limit after it is
    /// still a success (it used to be reported as unreadable only if it said `errors:true`, and
    /// cost a parse of every item); key order and whitespace do not matter, nor strings that
    /// look like the key.
    @Test func elasticsearchErrorsFlagIsReadFromTheHead() {
        let cut = String(bulk(Array(repeating: 201, count: 50)).dropLast(500))
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(200, cut), records: records(50)) == nil)
        let spaced = #"{ "took" : 3, "note": "\"errors\":true", "errors" : false , "items" : [ {"create":{"status":400}} ] }"#
        #expect(AnswerReader.elasticsearchBulk.partialFailure(in: response(200, spaced), records: records(1)) == nil)
        let itemsFirst = #"{"items":[{"create":{"status":201}},{"index":{"status":400,"error":{"type":"t","reason":"r \"}\" ]"}}}],"errors":true}"#
        #expect(
            AnswerReader.elasticsearchBulk.partialFailure(in: response(200, itemsFirst), records: records(2))?.rejected
                == [.init(index: 1, reason: #"400 t: r "}" ]"#)])
        let scan = Array(itemsFirst.utf8).withUnsafeBytes { ElasticsearchBulkAnswer.BulkScan($0) }
        #expect(scan.errors == true && scan.complete && scan.items.count == 2)
    }

    // MARK: ClickHouse

    /// ClickHouse's exception codes for a wrong table, column or row are permanent, in both
    /// the 18.x form and the later one; a body cut short (33) or an overload is not.
    @Test func clickHousePermanentCodes() {
        let reader = AnswerReader.clickHouse
        #expect(reader.isPermanent(response(500, "Code: 16, e.displayText() = DB::Exception: No such column nosuch in table logs, e.what() = DB::Exception\n")))
        #expect(
            reader.isPermanent(
                response(
                    500,
                    "Code: 117. DB::Exception: Unknown field found while parsing JSONEachRow format: nosuch: (at row 1). (INCORRECT_DATA) (version 24.8.4.13)\n"
                )))
        #expect(reader.isPermanent(response(404, "Code: 60. DB::Exception: Table default.nosuch does not exist. (UNKNOWN_TABLE)")))
        #expect(!reader.isPermanent(response(500, "Code: 33, e.displayText() = DB::Exception: Unexpected end of stream while parsing JSONEachRow format")))
        #expect(!reader.isPermanent(response(503, "Code: 202. DB::Exception: Too many simultaneous queries. (TOO_MANY_SIMULTANEOUS_QUERIES)")))
        #expect(!reader.isPermanent(response(500, "Internal Server Error")))
        #expect(!reader.isPermanent(response(200, "Code: 16.")))
    }

    /// A proxy's HTML error page (nginx's, as it sends it) reads as its words, not `<html>`.
    @Test func anHTMLAnswerReadsAsItsWords() {
        let page =
            "<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n"
            + "<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
        let answer = UploadResponse(statusCode: 429, headers: ["Content-Type": "text/html"], body: Data(page.utf8), bytesSent: 0)
        #expect(answer.firstLine() == "429 Too Many Requests nginx/1.22.1")
        #expect(answer.firstLine(limit: 8) == "429 Too Ma…")
    }

    /// A failure line shows the body's first line, bounded, with control characters escaped.
    @Test func anAnswersFirstLineIsShownSafely() {
        #expect(response(500, "Code: 16. DB::Exception: x\nstack trace\n").firstLine() == "Code: 16. DB::Exception: x")
        #expect(response(500, "\u{1B}[31mred\ttab\r\nmore").firstLine() == "\\u{1B}[31mred\\u{9}tab")
        #expect(response(500, String(repeating: "a", count: 500)).firstLine(limit: 10) == "aaaaaaaaaa…")
        #expect(response(500, "\n\nlater").firstLine() == nil)
        #expect(UploadResponse(statusCode: 500, headers: [:], body: Data([0x61, 0xFF, 0x62]), bytesSent: 0).firstLine() == "a\\u{FFFD}b")
    }

    // MARK: Splunk

    /// Code 6 for event N: N refused, the events after it not processed (sent again at once).
    @Test func splunkInvalidEventNumber() {
        let body = #"{"text":"Invalid data format","code":6,"invalid-event-number":2}"#
        let failure = AnswerReader.splunkHEC.partialFailure(in: response(400, body), records: records(5))
        #expect(failure?.rejected == [PartialFailure.Rejection(index: 2, reason: "code 6: Invalid data format")])
        #expect(failure?.unprocessedFrom == 3 && failure?.backoff == false)
        let last = AnswerReader.splunkHEC.partialFailure(
            in: response(400, #"{"text":"Event field cannot be blank","code":13,"invalid-event-number":"4"}"#), records: records(5))
        #expect(last?.rejected.map(\.index) == [4] && last?.unprocessedFrom == nil)
        let outside = AnswerReader.splunkHEC.partialFailure(in: response(400, #"{"code":6,"invalid-event-number":9}"#), records: records(5))
        #expect(outside?.unidentified == 1)
        #expect(AnswerReader.splunkHEC.partialFailure(in: response(401, #"{"text":"Token is required","code":2}"#), records: records(5)) == nil)
        #expect(AnswerReader.splunkHEC.partialFailure(in: response(200, #"{"text":"Success","code":0}"#), records: records(5)) == nil)
    }

    // MARK: OTLP

    /// `rejectedLogRecords` as a string (proto3 JSON's int64) or a number: unidentified; 0 with
    /// a message is a warning; `{}` says nothing.
    @Test func otlpPartialSuccess() {
        for count in [#""3""#, "3"] {
            let body = #"{"partialSuccess":{"rejectedLogRecords":\#(count),"errorMessage":"too old"}}"#
            let failure = AnswerReader.otlp.partialFailure(in: response(200, body), records: records(10))
            #expect(failure?.unidentified == 3 && failure?.rejected.isEmpty == true)
            #expect(failure?.summary.contains("rejected 3 of 10 log records (too old)") == true)
        }
        let warning = AnswerReader.otlp.partialFailure(in: response(200, #"{"partialSuccess":{"errorMessage":"deprecated field"}}"#), records: records(1))
        #expect(warning?.rejectedCount == 0 && warning?.summary == "the OTLP receiver warned: deprecated field")
        #expect(AnswerReader.otlp.partialFailure(in: response(200, "{}"), records: records(1)) == nil)
    }

    /// A protobuf `ExportLogsServiceResponse` (as the OpenTelemetry classes encode it) is read
    /// as its JSON is: its `partial_success` refuses 3 unidentified records; an empty one (full
    /// success) says nothing, with or without its content type.
    @Test func otlpPartialSuccessInProtobuf() throws {
        func answer(_ hex: String, type: String?) -> UploadResponse {
            let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
            return UploadResponse(statusCode: 200, headers: type.map { ["Content-Type": $0] } ?? [:], body: Data(bytes), bytesSent: 0)
        }
        for type in ["application/x-protobuf", nil] {
            let failure = AnswerReader.otlp.partialFailure(in: answer(OTLPFixture.partialSuccessHex, type: type), records: records(10))
            #expect(failure?.unidentified == 3, "\(type ?? "no type")")
            #expect(failure?.summary.contains("rejected 3 of 10 log records (3 log records rejected)") == true)
            #expect(AnswerReader.otlp.partialFailure(in: answer("", type: type), records: records(10)) == nil)
        }
        // A warning: partial_success { error_message: "slow down" }, nothing rejected.
        let warning = AnswerReader.otlp.partialFailure(in: answer("0a0b1209736c6f7720646f776e", type: "application/x-protobuf"), records: records(1))
        #expect(warning?.rejectedCount == 0 && warning?.summary == "the OTLP receiver warned: slow down")
    }

    /// A failure answered in protobuf (`google.rpc.Status`, as OTLP/HTTP receivers answer) is
    /// shown by its message, not as bytes.
    @Test func aProtobufStatusIsShownByItsMessage() {
        // Status { code: 3, message: "bad data" }
        let body = Data([0x08, 0x03, 0x12, 0x08] + Array("bad data".utf8))
        let answer = UploadResponse(statusCode: 400, headers: ["Content-Type": "application/x-protobuf"], body: body, bytesSent: 0)
        #expect(answer.firstLine() == "bad data")
        // Loki's OTLP endpoint says application/octet-stream; a body that is not a Status stays bytes.
        let loki = UploadResponse(statusCode: 503, headers: ["Content-Type": "application/octet-stream"], body: body, bytesSent: 0)
        #expect(loki.firstLine() == "bad data")
        let other = UploadResponse(statusCode: 503, headers: ["Content-Type": "application/octet-stream"], body: Data("busy".utf8), bytesSent: 0)
        #expect(other.firstLine() == "busy")
    }

    // MARK: Loki

    private func lokiRecords(_ times: [Int64]) -> () -> [[UInt8]] {
        { times.map { Array(#"["\#($0)","line"]"#.utf8) } }
    }

    /// Loki's 400 names ignored entries by time, in Go's form or RFC 3339: found by their
    /// unique times; valid entries were stored.
    @Test func lokiIgnoredEntriesAreFoundByTime() {
        let times: [Int64] = [1_700_000_000_123_000_000, 1_700_000_000_123_000_001, 1_700_000_000_124_000_000, 1_700_000_001_000_000_000]
        let body = """
            entry with timestamp 2023-11-14 22:13:20.123000001 +0000 UTC ignored, reason: 'entry too far behind, oldest acceptable timestamp is: 2023-11-14T22:00:00Z' for stream: {job="x"},
            entry with timestamp 2023-11-14T23:13:21+01:00 ignored, reason: 'line too long' for stream: {job="x"},
            user 'fake', total ignored: 2 out of 4

            """
        let failure = AnswerReader.loki.partialFailure(in: response(400, body), records: lokiRecords(times))
        #expect(
            failure?.rejected == [
                PartialFailure.Rejection(index: 1, reason: "entry too far behind, oldest acceptable timestamp is: 2023-11-14T22:00:00Z"),
                PartialFailure.Rejection(index: 3, reason: "line too long"),
            ])
        #expect(failure?.unprocessedFrom == nil && failure?.unidentified == 0)
    }

    private func lokiLines(_ lines: [String]) -> () -> [[UInt8]] {
        { lines.enumerated().map { Array(#"["\#(1_700_000_000_000_000_000 + $0.offset)","\#($0.element)"]"#.utf8) } }
    }

    /// Loki 3's distributor groups its errors by text (`N errors like: …; M errors like: …`,
    /// no count for one error alone): lines too long are found by the length each group
    /// names, and only they are refused (it used to keep every line of the request as refused,
    /// or stop).
    @Test func lokiGroupedErrorsAreFoundByLineLength() {
        let lines = ["short", String(repeating: "x", count: 300), "ok", String(repeating: "y", count: 300), String(repeating: "é", count: 200), "fine"]
        let body =
            "2 errors like: max entry size '256' bytes exceeded for stream '{job=\"x\"}' while adding an entry with length '300' bytes; "
            + "1 errors like: Max entry size '256' bytes exceeded for stream '{job=\"x\"}' while adding an entry with length '400' bytes\n"
        let failure = AnswerReader.loki.partialFailure(in: response(400, body), records: lokiLines(lines))
        #expect(failure?.rejected.map(\.index) == [1, 3, 4] && failure?.unidentified == 0)
        #expect(failure?.summary.hasPrefix("Loki refused 3 of 6 entries: max entry size '256' bytes exceeded") == true)
        let alone = "max entry size '256' bytes exceeded for stream '{job=\"x\"}' while adding an entry with length '300' bytes\n"
        #expect(
            AnswerReader.loki.partialFailure(in: response(400, alone), records: lokiLines(["a", String(repeating: "x", count: 300)]))?.rejected.map(\.index)
                == [1])
    }

    /// A request's entries go to several streams (one per host and shard), and Loki groups its
    /// errors by their text, which names the stream: groups that name one length (or one
    /// second) in different streams together account for the entries of that length.
    @Test func lokiGroupsOfSeveralStreamsAreFoundTogether() {
        let lines = ["short", String(repeating: "x", count: 300), "ok", String(repeating: "y", count: 300), String(repeating: "z", count: 300)]
        let stream = { (shard: Int) in "for stream '{host=\"h\", job=\"x\", streamup_shard=\"\(shard)\"}'" }
        let body =
            "2 errors like: max entry size '256' bytes exceeded \(stream(3)) while adding an entry with length '300' bytes; "
            + "1 errors like: max entry size '256' bytes exceeded \(stream(5)) while adding an entry with length '300' bytes\n"
        let failure = AnswerReader.loki.partialFailure(in: response(400, body), records: lokiLines(lines))
        #expect(failure?.rejected.map(\.index) == [1, 3, 4] && failure?.unidentified == 0, "\(String(describing: failure))")
        let times: [Int64] = [1_700_000_000_100_000_000, 1_700_000_000_200_000_000, 1_700_000_005_000_000_000]
        let old = { (shard: Int) in
            "entry \(stream(shard)) has timestamp too old: 2023-11-14T22:13:20Z, oldest acceptable timestamp is: 2023-11-15T00:00:00Z"
        }
        let split = "1 errors like: " + old(1) + "; 1 errors like: " + old(6)
        #expect(AnswerReader.loki.partialFailure(in: response(400, split), records: lokiRecords(times))?.rejected.map(\.index) == [0, 1])
    }

    /// Timestamps too old or too new are named to the second: found when that second holds
    /// as many entries as the group counts, else the whole request is kept; errors that are
    /// not about entries (a label problem alone) say nothing of single records.
    @Test func lokiGroupedTimestampErrors() {
        let times: [Int64] = [1_700_000_000_100_000_000, 1_700_000_000_200_000_000, 1_700_000_005_000_000_000]
        let old =
            "2 errors like: entry for stream '{job=\"x\"}' has timestamp too old: 2023-11-14T22:13:20Z, oldest acceptable timestamp is: 2023-11-15T00:00:00Z\n"
        #expect(AnswerReader.loki.partialFailure(in: response(400, old), records: lokiRecords(times))?.rejected.map(\.index) == [0, 1])
        let one = "entry for stream '{job=\"x\"}' has timestamp too new: 2023-11-14T22:13:20Z"
        let unplaced = AnswerReader.loki.partialFailure(in: response(400, one), records: lokiRecords(times))
        #expect(unplaced?.unidentified == 1 && unplaced?.rejected.isEmpty == true)
        #expect(
            AnswerReader.loki.partialFailure(in: response(400, "error at least one label pair is required per stream\n"), records: lokiRecords(times)) == nil)
        let mixed =
            "1 errors like: error at least one label pair is required per stream; 2 errors like: entry for stream '{job=\"x\"}' has timestamp too old: 2023-11-14T22:13:20Z, oldest acceptable timestamp is: 2023-11-15T00:00:00Z"
        #expect(AnswerReader.loki.partialFailure(in: response(400, mixed), records: lokiRecords(times))?.unidentified == 3)
    }

    /// An answer that names fewer entries than it ignored (a label problem, a cut answer), or a
    /// time that matches no single record, keeps the whole request.
    @Test func lokiAnswersThatCannotBePlacedKeepTheWholeRequest() {
        let times: [Int64] = [1_700_000_000_123_000_000, 1_700_000_000_124_000_000]
        let labels = "error at least one label pair is required per stream\nuser 'fake', total ignored: 2 out of 2\n"
        #expect(AnswerReader.loki.partialFailure(in: response(400, labels), records: lokiRecords(times))?.unidentified == 2)
        let unknown = "entry with timestamp 2023-11-14T22:13:20.5Z ignored, reason: 'x' for stream: {a=\"b\"},\nuser 'fake', total ignored: 1 out of 2\n"
        #expect(AnswerReader.loki.partialFailure(in: response(400, unknown), records: lokiRecords(times))?.unidentified == 1)
        #expect(AnswerReader.loki.partialFailure(in: response(400, "invalid JSON\n"), records: lokiRecords(times)) == nil)
        #expect(AnswerReader.loki.partialFailure(in: response(204, ""), records: lokiRecords(times)) == nil)
    }

    /// Loki's timestamps in both forms, any zone offset and fraction length; nonsense is nil.
    @Test func lokiTimestamps() {
        #expect(LokiTimestamp.nanoseconds("2023-11-14T22:13:20.123Z") == 1_700_000_000_123_000_000)
        #expect(LokiTimestamp.nanoseconds("2023-11-14 22:13:20.123456789 +0000 UTC") == 1_700_000_000_123_456_789)
        #expect(LokiTimestamp.nanoseconds("2023-11-14 23:13:20 +0100 CET") == 1_700_000_000_000_000_000)
        #expect(LokiTimestamp.nanoseconds("2023-11-14T17:13:20.1-05:00") == 1_700_000_000_100_000_000)
        #expect(LokiTimestamp.nanoseconds("1970-01-01T00:00:00Z") == 0)
        #expect(LokiTimestamp.nanoseconds("2000-02-29T00:00:00Z") == 951_782_400_000_000_000)
        for bad in ["2023-11-14", "2023-13-14T00:00:00Z", "2023-11-14T22:13:20.Z", "2023-11-14T22:13:20", "2023-11-14T22:13:20.1234567890Z"] {
            #expect(LokiTimestamp.nanoseconds(bad) == nil, "\(bad)")
        }
    }

    // MARK: Offsets

    /// Record numbers become the records' byte ranges; a number outside the request keeps the
    /// whole request.
    @Test func recordNumbersBecomeStreamOffsets() {
        let records = [100..<110, 110..<125, 125..<140]
        let splunk = PartialFailure(rejected: [.init(index: 1, reason: "bad")], unprocessedFrom: 2, summary: "s")
        let partial = splunk.offsets(records: records, carried: 100..<140)
        #expect(partial.rejection?.records == [.init(range: 110..<125, reason: "bad")])
        #expect(partial.rejection?.whole == false && partial.unprocessedFrom == 125)
        let outside = PartialFailure(rejected: [.init(index: 3, reason: "bad")], summary: "s").offsets(
            records: records, carried: 100..<140)
        #expect(outside.rejection?.whole == true && outside.rejection?.records.map(\.range) == [100..<140])
    }
}
