import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Loki pushes as the uploader builds them (``Receiver/loki``'s envelope over records of Loki
/// entries): a resent entry goes to the stream of its first send however the segments around it
/// are cut, no stream carries more than a small share of a push (so Loki never shards one
/// itself), and entries of other machines go to their machines' streams.
@Suite struct LokiStreamsTests {
    /// One stored entry of a push: its stream's labels and its structured metadata.
    private struct Entry: Equatable {
        var labels: [String: String]
        var line: String
        var metadata: [String: String]
    }

    /// The Loki records of `lines` from a machine called `host` (nil: this machine), read from
    /// `/var/log/app.log` at ``recordsReadAt`` (each 1 ns after the one before).
    private func lokiRecords(_ lines: [String], host: String? = nil) throws -> [UInt8] {
        var formatter = try RecordFormatter(
            format: .ndjson, shape: .lokiEntry, host: host ?? RecordFormatter.localHostName(), path: "/var/log/app.log")
        return records(&formatter, lines.map { Array($0.utf8) })
    }

    /// The push the Loki envelope makes of `records`, parsed: each entry by its time and line.
    private func push(_ records: [UInt8], labels: [(name: String, value: String)] = [], host: String = "collector") throws -> [String: Entry] {
        let encoding = BodyEncoding(envelope: try Receiver.loki.envelope(labels: labels, host: host))
        let body = try readAll(encoding.stages(over: BytesSource(pieces: [records])))
        return try Self.entries(of: body)
    }

    /// The entries of a push body, by time and line (entries of separate formatters may share
    /// a time); each once.
    private static func entries(of body: [UInt8]) throws -> [String: Entry] {
        let push = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let streams = try #require(push["streams"] as? [[String: Any]])
        var entries: [String: Entry] = [:]
        for stream in streams {
            let labels = try #require(stream["stream"] as? [String: String])
            for value in try #require(stream["values"] as? [[Any]]) {
                let line = try #require(value[1] as? String)
                let key = try #require(value.first as? String) + " " + line
                #expect(entries[key] == nil, "\(key) twice in one push")
                entries[key] = Entry(labels: labels, line: line, metadata: value.count > 2 ? try #require(value[2] as? [String: String]) : [:])
            }
        }
        return entries
    }

    /// Records cut into segments anew (as a resend after a smaller segment size, or a restart
    /// from the state file, cuts them) put every entry in the stream its first send chose; in
    /// each push of a few hundred entries, no stream carries more than a quarter of the line
    /// bytes, and there are at most 8 streams per host (Loki shards a stream whose rate plus
    /// push passes its desired rate: spread over 8 by the entry alone, none gets near it).
    @Test(arguments: [UInt64(1), 2, 3])
    func everyEntryKeepsItsStreamHoweverSegmentsAreCut(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let lines = (0..<3_000).map { number in String(format: "line-%05d ", number) + String(repeating: "x", count: Int.random(in: 0...200, using: &random)) }
        let records = try lokiRecords(lines)
        let whole = try push(records)
        #expect(whole.count == lines.count)
        #expect(Set(whole.values.map(\.labels)).count == 8, "\(Set(whole.values.map(\.labels)))")
        let recordEnds = records.indices.filter { records[$0] == 0x0A }.map { $0 + 1 }
        var start = 0
        while start < records.count {
            let end = recordEnds.first { $0 >= start + Int.random(in: 1...60_000, using: &random) } ?? records.count
            let segment = try push(Array(records[start..<end]))
            for (time, entry) in segment {
                #expect(entry == whole[time], "\(time): \(entry.labels) against \(String(describing: whole[time]?.labels)), \(random)")
            }
            if segment.count >= 300 {
                let bytes = segment.values.reduce(0) { $0 + $1.line.utf8.count }
                for (labels, entries) in Dictionary(grouping: segment.values, by: \.labels) {
                    let share = entries.reduce(0) { $0 + $1.line.utf8.count }
                    #expect(share * 4 <= bytes, "\(labels) carries \(share) of \(bytes) bytes, \(random)")
                }
            }
            start = end
        }
    }

    /// Entries that name another machine (journal files gathered from other hosts) are pushed
    /// in that machine's streams, without the host in their structured metadata; this
    /// machine's entries in the streams of the envelope's host.
    @Test func entriesOfOtherMachinesGoToTheirStreams() throws {
        let lines = (0..<600).map { "entry \($0)" }
        var records: [UInt8] = []
        for (index, chunk) in stride(from: 0, to: lines.count, by: 50).enumerated() {
            records += try lokiRecords(Array(lines[chunk..<chunk + 50]), host: [nil, "alpha", "beta"][index % 3])
        }
        let entries = try push(records, labels: [("job", "journal")])
        #expect(entries.count == lines.count)
        let hosts = Dictionary(grouping: entries.values, by: { $0.labels["host"] ?? "" }).mapValues { Set($0.map(\.line)) }
        #expect(Set(hosts.keys) == ["collector", "alpha", "beta"])
        for (index, chunk) in stride(from: 0, to: lines.count, by: 50).enumerated() {
            let host = ["collector", "alpha", "beta"][index % 3]
            #expect(hosts[host]?.isSuperset(of: lines[chunk..<chunk + 50]) == true, "\(host)")
        }
        #expect(entries.values.allSatisfy { $0.metadata == ["filename": "/var/log/app.log"] && $0.labels["job"] == "journal" })
        #expect(entries.values.allSatisfy { Set($0.labels.keys) == ["job", "host", LokiStreams.shardLabel] })
    }

    /// A `host` label given names this machine's entries; an entry of another machine keeps
    /// its own.
    @Test func aHostLabelNamesOnlyThisMachinesEntries() throws {
        let records = try lokiRecords(["mine"]) + lokiRecords(["theirs"], host: "alpha")
        let entries = try push(records, labels: [("host", "alias"), ("job", "app")])
        #expect(Dictionary(uniqueKeysWithValues: entries.values.map { ($0.line, $0.labels["host"] ?? "") }) == ["mine": "alias", "theirs": "alpha"])
    }

    /// The host member is found wherever it sits in the metadata, with white space, escapes
    /// and a line that holds `"host"` itself; it leaves the entry with its comma (the whole
    /// object when it was alone). A record that is not a Loki entry of strings has none.
    @Test func theHostMemberIsFoundAndLeftOut() {
        let cases: [(record: String, host: String?, sent: String)] = [
            (#"["1","a",{"host":"h"}]"#, #""h""#, #"["1","a"]"#),
            (#"["1","a",{"host":"h","filename":"f"}]"#, #""h""#, #"["1","a",{"filename":"f"}]"#),
            (#"["1","a",{"filename":"f","host":"h"}]"#, #""h""#, #"["1","a",{"filename":"f"}]"#),
            (#"["1","a",{"filename":"f","host":"h","env":"x"}]"#, #""h""#, #"["1","a",{"filename":"f","env":"x"}]"#),
            (#" [ "1" , "a" , { "env" : "x" , "host" : "h\"q" } ] "#, #""h\"q""#, #" [ "1" , "a" , { "env" : "x" } ] "#),
            (#"["1","{\"host\":\"no\"}",{"filename":"f"}]"#, nil, #"["1","{\"host\":\"no\"}",{"filename":"f"}]"#),
            (#"["1","a",{"host":""}]"#, nil, #"["1","a"]"#),
            (#"["1","a",{"host":1}]"#, nil, #"["1","a",{"host":1}]"#),
            (#"["1","a"]"#, nil, #"["1","a"]"#),
            (#"{"host":"h"}"#, nil, #"{"host":"h"}"#),
            (#"["1","a",{"host":"h"}] x"#, nil, #"["1","a",{"host":"h"}] x"#),
            (#"["1","a",{"host":"h""#, nil, #"["1","a",{"host":"h""#),
        ]
        for (record, host, sent) in cases {
            let bytes = Array(record.utf8)
            let entry = bytes.withUnsafeBytes { LokiEntry($0) }
            #expect(entry.host.map { String(decoding: bytes[$0], as: UTF8.self) } == host, "\(record)")
            var kept = bytes
            if let cut = entry.cut { kept.removeSubrange(cut) }
            #expect(String(decoding: kept, as: UTF8.self) == sent, "\(record)")
        }
    }

    /// A body with no entries is one empty stream (Loki refuses a push of no stream: 422).
    @Test func aPushOfNoEntriesHasOneEmptyStream() throws {
        let encoding = BodyEncoding(envelope: try Receiver.loki.envelope(labels: [], host: "h"))
        let body = try readAll(encoding.stages(over: BytesSource(pieces: [])))
        #expect(String(decoding: body, as: UTF8.self) == #"{"streams":[{"stream":{"job":"streamup","host":"h","streamup_shard":"0"},"values":[]}]}"#)
    }

    /// A live body writes the entries it has when the stage below has nothing more for now, and
    /// a long one in batches: every batch adds its streams (a stream may come twice), and the
    /// whole is one push of every entry once, each in the stream a one-go push gives it.
    @Test(arguments: [UInt64(4), 5, 6])
    func batchesKeepEveryEntrysStream(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let records = try lokiRecords((0..<2_000).map { "batched \($0) " + String(repeating: "y", count: Int.random(in: 0...100, using: &random)) })
        let streams = LokiStreams(labels: [(name: "job", value: "app")], host: "h")
        let expected = try Self.entries(of: Array(#"{"streams":["#.utf8) + Self.streams(streams, records) + Array("]}".utf8))
        let pieces = random.split(records, maximum: 5_000)
        let source = BytesSource(pieces: pieces, pausesAfter: Set(pieces.indices.filter { _ in Bool.random(using: &random) }))
        let stage = LokiStreamsStage(
            over: source, streams: streams, head: Array(#"{"streams":["#.utf8), tail: Array("]}".utf8),
            batchBytes: Int.random(in: 1...20_000, using: &random), inputCapacity: Int.random(in: 1...4_096, using: &random))
        var body: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        reading: while true {
            let size = Int.random(in: 1...buffer.count, using: &random)
            let blocking = Bool.random(using: &random)
            let read = try buffer.withUnsafeMutableBytes { try stage.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<size]), blocking: blocking) }
            switch read {
            case .bytes(let count): body += buffer.prefix(count)
            case .end: break reading
            case .wouldBlock:
                #expect(!blocking)
                source.resume()
            }
        }
        #expect(try Self.entries(of: body) == expected, "\(random)")
    }

    private static func streams(_ streams: LokiStreams, _ records: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        records.withUnsafeBytes { streams.appendStreams(of: $0, to: &output) }
        return output
    }
}
