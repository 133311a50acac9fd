import Foundation
import StreamUp
import Testing

@testable import streamup

/// `--to NAME` and `--label` as pure functions of argv: what a preset sets, what the options
/// given explicitly override, and the combinations that cannot work.
@Suite struct ReceiverOptionsTests {
    private func upload(_ arguments: [String]) throws -> UploadOptions {
        guard case .upload(let options) = try CommandLineParser.parse(arguments) else {
            Issue.record("not an upload command")
            return UploadOptions()
        }
        return options
    }

    /// A preset gives the receiver's request, records and limits, wherever `--to` stands.
    @Test func aPresetSetsRequestRecordsAndLimits() throws {
        let options = try upload(["--label", "app=web", "http://loki:3100", "--to", "loki"])
        let configuration = try options.configuration(url: options.url!)
        #expect(configuration.url.absoluteString == "http://loki:3100/loki/api/v1/push")
        #expect(configuration.contentType == "application/json" && configuration.method == "POST")
        // The labels name every stream, beside this machine's host (and a shard).
        let envelope = configuration.body.envelope
        #expect(envelope?.head == Array(#"{"streams":["#.utf8) && envelope?.tail == Array("]}".utf8))
        #expect(envelope?.lokiStreams == LokiStreams(labels: [(name: "app", value: "web")], host: RecordFormatter.localHostName()))
        #expect(options.records.effectiveFormat == .ndjson)
        #expect(try options.recordFormatter()?.shape == .lokiEntry)
        let library = options.libraryOptions
        #expect(library.segmentBytes == 1 << 20 && library.answerReader?.name == "Loki")
        #expect(options.tokenHeader == .bearer)
        #expect(try upload(["--to", "splunk-hec", "http://h"]).tokenHeader == .splunk)
        // A token file goes in the receiver's header unless --token-header says otherwise.
        #expect(try upload(["--to", "splunk-hec", "--token-file", "/t", "http://h"]).effectiveAuth.tokenStyle == .splunk)
        #expect(try upload(["--to", "datadog", "--token-file", "/t", "http://h"]).effectiveAuth.tokenStyle == .datadog)
        #expect(try upload(["--to", "datadog", "--token-file", "/t", "--token-header", "X-Key", "http://h"]).effectiveAuth.tokenStyle.name == "X-Key")
        #expect(try upload(["--to", "splunk-hec", "--bearer-token-file", "/t", "http://h"]).effectiveAuth.tokenStyle == .bearer)
    }

    /// The window of requests: a preset's (adapting up to 8; one for Vector, whose records
    /// carry no time), one for a plain URL, one where an option keeps one out, and an explicit
    /// `--max-in-flight` over all of them.
    @Test func theWindowIsThePresetsUnlessGivenOrKeptToOne() throws {
        func window(_ arguments: [String]) throws -> (Int, Bool) {
            let library = try upload(arguments + ["http://h"]).libraryOptions
            return (library.maxInFlight, library.adaptiveInFlight)
        }
        for name in Receiver.names where name != "vector" {
            #expect(try window(["--to", name]) == (8, true), "--to \(name)")
        }
        #expect(try window(["--to", "vector"]).0 == 1)
        #expect(try window([]).0 == 1)
        #expect(try window(["--to", "loki", "--dead-letter", "/d"]).0 == 1)
        #expect(try window(["--to", "loki", "-X", "PUT"]).0 == 1)
        #expect(try window(["--to", "clickhouse", "--single-request"]).0 == 1)
        #expect(try window(["--to", "loki", "--max-in-flight", "1"]).0 == 1)
        #expect(try window(["--to", "loki", "--max-in-flight", "3"]) == (3, true))
        #expect(try window(["--to", "vector", "--max-in-flight", "4"]).0 == 4)
        #expect(try window(["--max-in-flight", "4"]).0 == 4)
    }

    /// Options given explicitly win over the preset's, in whichever order they come.
    @Test func explicitOptionsOverrideThePreset() throws {
        let options = try upload([
            "--content-type", "application/x-ndjson", "--to", "victorialogs", "--message-key", "log", "--segment-bytes", "1MiB",
            "--max-record", "2MiB", "-X", "PUT", "http://vl:9428",
        ])
        let configuration = try options.configuration(url: options.url!)
        #expect(configuration.contentType == "application/x-ndjson" && configuration.method == "PUT")
        let query = URLComponents(url: configuration.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "_msg_field" }?.value == "log")
        #expect(options.records.effectiveKeys.message == "log" && options.records.effectiveKeys.time == "_time")
        #expect(options.libraryOptions.segmentBytes == 1 << 20 && options.libraryOptions.maxRecordBytes == (2 << 20) + 1)
        let raw = try upload(["--to", "clickhouse", "--format", "raw", "http://ch:8123/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow"])
        #expect(try raw.recordFormatter() == nil)
        #expect(try raw.configuration(url: raw.url!).url.absoluteString == "http://ch:8123/?query=INSERT%20INTO%20t%20FORMAT%20JSONEachRow")
    }

    /// What cannot work is refused before anything is sent, naming what to change.
    @Test func impossibleCombinationsAreUsageErrors() {
        #expect(throws: UsageError("--to: 'kafka' is not a receiver streamup knows (\(Receiver.names.joined(separator: ", ")))")) {
            try CommandLineParser.parse(["--to", "kafka", "http://h"])
        }
        #expect(throws: UsageError("--label needs --to loki, victorialogs or otlp (their labels, stream fields, resource attributes)")) {
            try CommandLineParser.parse(["--label", "a=b", "http://h"])
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--to", "elasticsearch", "--label", "a=b", "http://h"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--to", "loki", "--label", "novalue", "http://h"]) }
        #expect(throws: UsageError("--message-key cannot go with --to loki: its records use the receiver's own names")) {
            try CommandLineParser.parse(["--to", "loki", "--message-key", "m", "http://h"])
        }
        #expect(
            throws: UsageError(
                "--single-request cannot go with --to splunk-hec: it reads each request whole before storing any of it, so it needs segments (the default)")
        ) {
            try CommandLineParser.parse(["--to", "splunk-hec", "--single-request", "http://h"])
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--to", "otlp", "--resumable", "http://h"]) }
        #expect(throws: UsageError("--format ndjson makes records of lines: it cannot go with --records none")) {
            try CommandLineParser.parse(["tail", "--to", "loki", "--records", "none", "f", "http://h"])
        }
        #expect(throws: Never.self) { try CommandLineParser.parse(["--to", "victorialogs", "--single-request", "http://h"]) }
        #expect(throws: Never.self) { try CommandLineParser.parse(["tail", "--to", "fluent-bit", "--field", "env=prod", "f", "http://h"]) }
    }

    /// A Loki label name Loki would refuse is refused when the request is made.
    @Test func badLokiLabelNamesAreRefused() throws {
        let options = try upload(["--to", "loki", "--label", "app-name=x", "http://h"])
        #expect(throws: StreamUpError.self) { try options.configuration(url: options.url!) }
    }

    /// README's "Receivers" section gives a command for every preset.
    @Test func readmeHasACommandForEveryPreset() throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "### Receivers\n"))
        let section = readme[start.upperBound...].prefix { _ in true }.components(separatedBy: "\n### ").first ?? ""
        for receiver in Receiver.allCases {
            #expect(
                section.contains("streamup --to \(receiver.rawValue) ") || section.contains("streamup tail --to \(receiver.rawValue) "),
                "README's Receivers section has no command for \(receiver.rawValue)")
        }
    }

    /// `--help` lists the presets.
    @Test func helpListsThePresets() throws {
        guard case .help(let text) = try CommandLineParser.parse(["--help"]) else {
            Issue.record("no help")
            return
        }
        #expect(text.contains("--to RECEIVER") && text.contains("splunk-hec") && text.contains("--label KEY=VALUE"))
    }
}
