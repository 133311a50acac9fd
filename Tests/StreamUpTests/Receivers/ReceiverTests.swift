import Foundation
import Testing

@testable import StreamUp

/// The presets: where they send, and limits that respect each receiver's documented ones (the
/// pages are cited in `Receiver+Limits.swift` and the validators).
@Suite struct ReceiverTests {
    private func url(_ receiver: Receiver, _ text: String, labels: [(name: String, value: String)] = []) -> String {
        receiver.url(for: URL(string: text)!, labels: labels).absoluteString
    }

    /// A URL without a path gets the receiver's usual one; a URL with one is left alone
    /// (Elasticsearch: an index path gets `/_bulk`).
    @Test func urlsGetTheUsualPathOnlyWhenTheyHaveNone() {
        #expect(url(.loki, "http://h:3100") == "http://h:3100/loki/api/v1/push")
        #expect(url(.loki, "http://h:3100/") == "http://h:3100/loki/api/v1/push")
        #expect(url(.loki, "http://h/custom/push") == "http://h/custom/push")
        #expect(url(.otlp, "https://collector:4318") == "https://collector:4318/v1/logs")
        #expect(url(.splunkHEC, "https://splunk:8088") == "https://splunk:8088/services/collector/event")
        #expect(url(.datadog, "https://http-intake.logs.datadoghq.eu") == "https://http-intake.logs.datadoghq.eu/api/v2/logs")
        #expect(url(.elasticsearch, "http://es:9200") == "http://es:9200/logs-streamup-default/_bulk")
        #expect(url(.elasticsearch, "http://es:9200/app-logs/") == "http://es:9200/app-logs/_bulk")
        #expect(url(.elasticsearch, "http://es:9200/app-logs/_bulk?pipeline=p") == "http://es:9200/app-logs/_bulk?pipeline=p")
        #expect(url(.fluentBit, "http://fb:9880/app.logs") == "http://fb:9880/app.logs")
        #expect(url(.vector, "http://vector:8080") == "http://vector:8080")
    }

    /// ClickHouse gets an INSERT unless the URL has a query; VictoriaLogs gets its field
    /// parameters (host, path and the labels as stream fields) unless the URL sets them.
    @Test func queryHints() {
        #expect(url(.clickhouse, "http://ch:8123") == "http://ch:8123?query=INSERT%20INTO%20logs%20FORMAT%20JSONEachRow")
        #expect(
            url(.clickhouse, "http://ch:8123/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow")
                == "http://ch:8123/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow")
        #expect(
            url(.victorialogs, "http://vl:9428", labels: [("app", "web")])
                == "http://vl:9428/insert/jsonline?_msg_field=_msg&_time_field=_time&_stream_fields=host,path,app")
        #expect(
            url(.victorialogs, "http://vl:9428/insert/jsonline?_stream_fields=app")
                == "http://vl:9428/insert/jsonline?_stream_fields=app&_msg_field=_msg&_time_field=_time")
    }

    /// A preset's window of requests adapts up to 8 where records carry their own time, and
    /// stays at one for Vector (lines stamped on arrival).
    @Test(arguments: Receiver.allCases)
    func theWindowIsTheReceivers(receiver: Receiver) {
        let options = receiver.deliveryOptions()
        #expect(options.maxInFlight == (receiver == .vector ? 1 : 8) && options.adaptiveInFlight)
    }

    /// Every preset's requests and records (escapes included: a longer line is cut into records
    /// of at most ``RecordFormatter/maxRecordBytes``, `LineRecordsTests`) stay within its
    /// receiver's limits: Splunk Cloud 1 MB; Datadog 5 MB, 1,000 entries, 1 MB a log; Fluent Bit's 4 MiB
    /// buffer; OTLP: the 4 MiB gRPC message Loki makes of a request, 1.1 times its records (the Collector takes 20 MiB); Loki's 256 KiB line (decoded) and a request far inside its 30 s;
    /// VictoriaLogs' 256 KiB JSON line.
    @Test(arguments: Receiver.allCases)
    func limitsRespectTheReceiver(receiver: Receiver) throws {
        let options = receiver.deliveryOptions()
        let formatter = try receiver.formatter(
            host: "web-\(String(repeating: "h", count: 60))", path: "/var/log/\(String(repeating: "p", count: 200)).log",
            fields: [("env", "production"), ("team", "payments")])
        let record = formatter.maxRecordBytes
        #expect(record == receiver.limits.maxRecordBytes)
        // A record and its newline are never split by the buffer. (Vector's raw lines have no
        // JSON a split could break.)
        #expect(receiver.format == .raw || options.maxRecordBytes >= record + 1, "a record may be split")
        switch receiver {
        case .splunkHEC:
            #expect(options.segmentBytes <= 1_000_000 && record <= 1_000_000)
        case .datadog:
            #expect(options.segmentBytes + 2 <= 5_000_000 && options.maxRecordsPerSegment == 1000 && record <= 1_000_000)
        case .fluentBit:
            #expect(max(options.segmentBytes, record) + 2 < 4 << 20)
        case .otlp, .otlpJSON:
            #expect(Double(options.segmentBytes) * 1.1 < Double(4 << 20) && record + 4096 < 20 << 20)
        case .loki:
            #expect(record <= 256 << 10 && options.segmentBytes <= 1 << 20)
        case .victorialogs:
            #expect(record <= 256 << 10)
        case .elasticsearch:
            #expect(options.segmentBytes <= 15_000_000 && options.maxRecordsPerSegment != nil)
        case .clickhouse, .vector:
            break
        }
        #expect((receiver.answerReader != nil) == [.elasticsearch, .splunkHEC, .otlp, .otlpJSON, .loki, .clickhouse].contains(receiver))
    }

    /// The requests are whole documents: an empty request too (the envelope alone; Loki's
    /// with one empty stream, as a push of no stream is refused).
    @Test func envelopesMakeDocumentsOfTheirOwn() throws {
        let loki = BodyEncoding(envelope: try Receiver.loki.envelope(labels: [], host: "h"))
        #expect(
            String(decoding: try readAll(loki.stages(over: BytesSource(pieces: []))), as: UTF8.self)
                == #"{"streams":[{"stream":{"job":"streamup","host":"h","streamup_shard":"0"},"values":[]}]}"#)
        let otlp = try #require(try Receiver.otlpJSON.envelope(labels: [("service.name", "api")], host: "h"))
        #expect(
            String(decoding: otlp.head + otlp.tail, as: UTF8.self)
                == #"{"resourceLogs":[{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"h"}},{"key":"service.name","value":{"stringValue":"api"}}]},"scopeLogs":[{"scope":{"name":"streamup"},"logRecords":[]}]}]}"#
        )
        #expect(throws: StreamUpError.self) { try Receiver.loki.envelope(labels: [("__name__", "x")]) }
        #expect(throws: StreamUpError.self) { try Receiver.loki.envelope(labels: [("streamup_shard", "x")]) }
        #expect(try Receiver.splunkHEC.envelope() == nil && Receiver(named: "opensearch") == .elasticsearch)
    }

    /// `otlp` sends protobuf, OTLP/HTTP's default encoding (the one resource and scope as one
    /// binary request, no text envelope); `otlp-json` the same request as JSON.
    @Test func otlpIsProtobufAndOTLPJSONIsJSON() throws {
        let protobuf = try Receiver.otlp.configuration(url: URL(string: "http://collector:4318")!, keys: nil, labels: [("service.name", "api")], host: "h")
        #expect(protobuf.contentType == "application/x-protobuf" && protobuf.body.envelope == nil)
        #expect(protobuf.body.otlpExport == OTLPExport(resourceAttributes: [("host.name", "h"), ("service.name", "api")]))
        let json = try Receiver.otlpJSON.configuration(url: URL(string: "http://collector:4318")!, keys: nil, labels: [("service.name", "api")], host: "h")
        #expect(json.contentType == "application/json" && json.body.envelope != nil && json.body.otlpExport == nil)
        #expect(json.url.absoluteString == "http://collector:4318/v1/logs" && Receiver(named: "otlp-json") == .otlpJSON)
    }

    /// OTLP retries only what its specification lists (429, 502, 503, 504: "All other 4xx or
    /// 5xx response status codes MUST NOT be retried"); the other presets keep the uploader's
    /// default (408, 429, every 5xx).
    @Test(arguments: Receiver.allCases)
    func retriedAnswersAreTheReceivers(receiver: Receiver) {
        let retry = receiver.deliveryOptions().retry
        let retried = [400, 408, 413, 429, 500, 501, 502, 503, 504, 505].filter { retry.isRetryable(status: $0) }
        #expect(retried == ([.otlp, .otlpJSON].contains(receiver) ? [429, 502, 503, 504] : [408, 429, 500, 501, 502, 503, 504, 505]))
    }
}
