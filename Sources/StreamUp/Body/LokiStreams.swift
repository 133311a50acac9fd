#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a Loki push gathers its entries into streams: one stream per host and shard, so that an
/// entry sent again lands in the stream that holds its first copy, where Loki drops it.
///
/// Loki keeps an entry once per stream: one equal in stream, time and line to one it holds is
/// dropped, which makes a resend harmless. But Loki 3 shards a fast stream itself
/// (`limits_config.shard_streams`, on by default; grafana/loki `pkg/distributor`): once the
/// stream's rate (an average of one-second samples, 0.4 weight to the newest, refreshed every
/// second) plus the bytes of this push for it pass `desired_rate` (1536 KB/s), the push's
/// entries are dealt round robin over `ceil((rate + push) / desired_rate)` copies of the stream
/// with a `__stream_shard__` label, starting where the last push left off: a resent request is
/// dealt anew, its entries land in other copies, and both are kept.
///
/// So streamup shards its own streams, by the entry alone: the `streamup_shard` label is the
/// entry's hash (``LokiEntry/hash(_:leavingOut:)``) modulo ``shards``, the same for every send
/// of the entry, whatever the request around it, the run, or how segments were cut. With
/// entries spread evenly over 8 streams, each carries an eighth of the rate and of each push:
/// Loki's default tenant limit (`ingestion_rate_mb` 4, burst 6) gives each at most about
/// 0.5 MB/s and 128 KiB of a 1 MiB request, under half of `desired_rate`, and Loki never shards
/// them while streamup's rate into one tenant stays under about 11 MB/s (8 × 1.5 MB/s, less a
/// request's eighth). Eight streams per host and label set is the price; Loki's own sharding
/// makes as many (`ceil(rate / desired_rate)`) at those rates anyway.
///
/// A record's host (``LokiEntry``) replaces the default one (the `host` label given, else this
/// machine's name) in its stream's labels, so entries gathered from other machines (journal
/// files) are labelled as theirs.
///
/// Thread safety: a value type.
package struct LokiStreams: Equatable, Sendable {
    /// The label that names a stream's shard.
    package static let shardLabel = "streamup_shard"
    /// Streams per host and label set (see the type's documentation for why eight).
    package static let defaultShards = 8

    /// How many shards each host's entries are spread over (1: no shard label).
    package let shards: Int
    /// The labels' JSON up to the host's value: `{"job":"app","host":`.
    private let beforeHost: [UInt8]
    /// The host of entries that name none, as a JSON string.
    private let defaultHost: [UInt8]
    /// The labels after the host's value, the closing brace left out.
    private let afterHost: [UInt8]

    /// The streams of `labels` (each name once; the last value of a repeated one, in the first
    /// one's place), with `host` as the host of entries that name none unless a `host` label is
    /// given (it is then the default instead, in its place; else `host` is added last).
    package init(labels: [(name: String, value: String)], host: String, shards: Int = LokiStreams.defaultShards) {
        precondition(shards > 0, "a Loki stream needs at least one shard")
        self.shards = shards
        var members = RecordLayout.uniqued(labels)
        if !members.contains(where: { $0.name == "host" }) { members.append((name: "host", value: host)) }
        var before: [UInt8] = [0x7B]
        var after: [UInt8] = []
        var defaultHost: [UInt8] = []
        var seenHost = false
        for (index, member) in members.enumerated() {
            let text = (index > 0 ? [0x2C] : []) + RecordLayout.jsonString(member.name) + [0x3A]
            if member.name == "host" {
                before += text
                defaultHost = RecordLayout.jsonString(member.value)
                seenHost = true
            } else if seenHost {
                after += text + RecordLayout.jsonString(member.value)
            } else {
                before += text + RecordLayout.jsonString(member.value)
            }
        }
        beforeHost = before
        afterHost = after
        self.defaultHost = defaultHost
    }

    /// Appends one stream object per host and shard of `records` (records of Loki entries, each
    /// ending in `\n`, the last one may not), `{"stream":{…},"values":[…]}` joined by commas, in
    /// the order their first entries come; each entry is sent without its host member. Empty
    /// records are no entries. Nothing is appended when there are none.
    package func appendStreams(of records: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        var order: [Key] = []
        var entries: [Key: [(range: Range<Int>, cut: Range<Int>?)]] = [:]
        var start = 0
        while start < records.count {
            let rest = records.count - start
            let end = memchr(records.baseAddress! + start, 0x0A, rest).map { records.baseAddress!.distance(to: UnsafeRawPointer($0)) } ?? records.count
            if end > start {
                let record = UnsafeRawBufferPointer(rebasing: records[start..<end])
                let entry = LokiEntry(record)
                let hash = LokiEntry.hash(record, leavingOut: entry.cut)
                let key = Key(host: entry.host.map { Array(record[$0]) }, shard: Int(hash % UInt64(shards)))
                let cut = entry.cut.map { (start + $0.lowerBound)..<(start + $0.upperBound) }
                if entries[key] == nil { order.append(key) }
                entries[key, default: []].append((start..<end, cut))
            }
            start = end + 1
        }
        for (index, key) in order.enumerated() {
            if index > 0 { output.append(0x2C) }
            appendLabels(host: key.host, shard: key.shard, to: &output)
            for (number, entry) in (entries[key] ?? []).enumerated() {
                if number > 0 { output.append(0x2C) }
                if let cut = entry.cut {
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: records[entry.range.lowerBound..<cut.lowerBound]))
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: records[cut.upperBound..<entry.range.upperBound]))
                } else {
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: records[entry.range]))
                }
            }
            output += Array("]}".utf8)
        }
    }

    /// Appends a stream object with no entries, of the default host's first shard (a push with
    /// no stream at all is refused: 422).
    package func appendEmptyStream(to output: inout [UInt8]) {
        appendLabels(host: nil, shard: 0, to: &output)
        output += Array("]}".utf8)
    }

    /// `{"stream":{labels},"values":[`.
    private func appendLabels(host: [UInt8]?, shard: Int, to output: inout [UInt8]) {
        output += Array(#"{"stream":"#.utf8)
        output += beforeHost
        output += host ?? defaultHost
        output += afterHost
        if shards > 1 { output += Array(#","\#(Self.shardLabel)":"\#(shard)""#.utf8) }
        output += Array(#"},"values":["#.utf8)
    }

    /// A stream of one push: its host as the entries write it (nil: the default) and its shard.
    ///
    /// Thread safety: a value type.
    private struct Key: Hashable {
        var host: [UInt8]?
        var shard: Int
    }
}
