import Foundation

/// Reads a Loki push answer. Loki validates entry by entry and stores the valid ones; when some
/// fail it answers 400 in one of two forms.
///
/// The distributor (Loki 3: line too long, timestamps too old or too new) groups its errors by
/// their text, `; ` between groups, each after `N errors like: ` when there is more than one
/// group or more than one error (grafana/loki `pkg/util/errors.go`, `GroupedErrors`; the texts
/// are `pkg/validation/validate.go`'s):
///
///     30 errors like: Max entry size '262144' bytes exceeded for stream '{job="x"}' while adding an entry with length '300000' bytes
///
/// The ingester names each ignored entry and gives a total:
///
///     entry with timestamp 2026-11-22 08:15:30.123 +0000 UTC ignored, reason: 'entry too far behind, …' for stream: {job="x"},
///     user 'fake', total ignored: 1 out of 120
///
/// (https://grafana.com/docs/loki/latest/operations/troubleshooting/troubleshoot-ingest/;
/// `pkg/distributor/distributor.go` and `pkg/ingester/stream.go` where the docs are silent).
///
/// Entries are found among the request's records: by the line length a "max entry size" error
/// names, by the second a timestamp error names (the groups that name one length or second in
/// different streams, a push's hosts and shards, together), by the nanosecond time the ingester names
/// (streamup's Loki entries have unique times, ``RecordShape/lokiEntry``). When the errors do
/// not account for every entry they count (a label problem that refused the whole stream, an
/// answer cut at the response limit, a time or length that matches another number of
/// records), the whole request is kept, and the summary says so. An answer with no entry
/// errors in it (invalid JSON, a label problem alone) says nothing of single records: its
/// status decides.
///
/// Thread safety: stateless.
enum LokiAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.statusCode == 400 else { return nil }
        let text = answer.bodyText
        guard let (ignored, total) = totals(in: text) else { return readGrouped(text, records: records) }
        let named = entries(in: text)
        let sent = records()
        var byTime: [Int64: [Int]] = [:]
        for (index, record) in sent.enumerated() {
            if let time = entryTime(record) { byTime[time, default: []].append(index) }
        }
        var rejected: [PartialFailure.Rejection] = []
        var unmatched = 0
        var counts: [Int64: Int] = [:]
        for entry in named { counts[entry.time, default: 0] += 1 }
        for (time, count) in counts {
            guard let indexes = byTime[time], indexes.count == count else {
                unmatched += count
                continue
            }
            let reasons = named.filter { $0.time == time }.map(\.reason)
            for (index, reason) in zip(indexes, reasons) { rejected.append(PartialFailure.Rejection(index: index, reason: reason)) }
        }
        rejected.sort { $0.index < $1.index }
        guard unmatched == 0, rejected.count == ignored else {
            return PartialFailure(
                unidentified: ignored,
                summary:
                    "Loki ignored \(ignored) of \(total) entries and named \(rejected.count) of them in its answer; the whole request is kept, its other entries were stored"
            )
        }
        let first = rejected.first.map { ": \($0.reason)" } ?? ""
        return PartialFailure(rejected: rejected, summary: "Loki ignored \(ignored) of \(total) entries\(first)")
    }

    // MARK: The distributor's grouped errors

    /// One group of the distributor's answer: how many entries its text stands for.
    struct Group: Equatable {
        var count: Int
        var text: String
    }

    /// What one error text says about which entries it refused.
    enum Match: Equatable {
        /// Entries whose line is this many bytes long (`max entry size … length 'N' bytes`).
        case lineLength(Int)
        /// Entries whose time falls in the second starting at this many nanoseconds.
        case second(Int64)
        /// Not about single entries (labels, limits, anything else).
        case none
    }

    /// The grouped form: which records its entry errors name.
    static func readGrouped(_ text: String, records: () -> [[UInt8]]) -> PartialFailure? {
        let groups = groups(in: text)
        let found = groups.map { match($0.text) }
        guard found.contains(where: { $0 != .none }) else { return nil }
        let sent = records()
        let refused = groups.reduce(0) { $0 + $1.count }
        // Each error text names its stream: a push's streams (hosts, shards) refusing lines of
        // one length, or times of one second, are several groups of one match.
        var merged: [(match: Match, group: Group)] = []
        for (group, match) in zip(groups, found) where match != .none {
            if let index = merged.firstIndex(where: { $0.match == match }) {
                merged[index].group.count += group.count
            } else {
                merged.append((match, group))
            }
        }
        var rejected: [PartialFailure.Rejection] = []
        var placed = Set<Int>()
        for (match, group) in merged {
            let indexes = sent.indices.filter { !placed.contains($0) && matches(sent[$0], match) }
            guard indexes.count == group.count else { continue }
            placed.formUnion(indexes)
            rejected += indexes.map { PartialFailure.Rejection(index: $0, reason: group.text) }
        }
        rejected.sort { $0.index < $1.index }
        let first = groups.first.map { ": \($0.text)" } ?? ""
        guard rejected.count == refused else {
            return PartialFailure(
                unidentified: refused,
                summary:
                    "Loki refused \(refused) of \(sent.count) entries\(first); the answer does not say which of them, so the whole request is kept (its other entries were stored)"
            )
        }
        return PartialFailure(rejected: rejected, summary: "Loki refused \(refused) of \(sent.count) entries\(first)")
    }

    /// The groups of `text`: `N errors like: T; M errors like: U`, or one error `T` alone.
    static func groups(in text: String) -> [Group] {
        let body = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !body.isEmpty else { return [] }
        // Each group: where it starts (its `; ` or the start), where its text starts, its count.
        var found: [(start: String.Index, text: String.Index, count: Int)] = []
        var search = body.startIndex
        while let marker = body.range(of: " errors like: ", range: search..<body.endIndex) {
            search = marker.upperBound
            var digits = marker.lowerBound
            while digits > body.startIndex, body[body.index(before: digits)].isASCII, body[body.index(before: digits)].isNumber {
                digits = body.index(before: digits)
            }
            guard let count = Int(body[digits..<marker.lowerBound]) else { continue }
            if digits == body.startIndex {
                found.append((digits, marker.upperBound, count))
            } else if body[..<digits].hasSuffix("; ") {
                found.append((body.index(digits, offsetBy: -2), marker.upperBound, count))
            }
        }
        guard let first = found.first, first.start == body.startIndex else { return [Group(count: 1, text: body)] }
        return found.indices.map { index in
            let end = index + 1 < found.count ? found[index + 1].start : body.endIndex
            return Group(count: found[index].count, text: String(body[found[index].text..<end]))
        }
    }

    /// What an error text says about its entries (Loki's texts, any case).
    static func match(_ text: String) -> Match {
        let lower = text.lowercased()
        if lower.hasPrefix("max entry size"), let range = lower.range(of: "while adding an entry with length ") {
            let digits = lower[range.upperBound...].drop { $0 == "'" }.prefix { $0.isASCII && $0.isNumber }
            return Int(digits).map(Match.lineLength) ?? .none
        }
        for marker in ["has timestamp too old: ", "has timestamp too new: "] {
            guard let range = text.range(of: marker) else { continue }
            let time = text[range.upperBound...].prefix { $0 != "," }
            guard let nanoseconds = LokiTimestamp.nanoseconds(String(time)) else { return .none }
            return .second(nanoseconds - nanoseconds % 1_000_000_000)
        }
        return .none
    }

    /// Whether the Loki entry `record` is one `match` names.
    static func matches(_ record: [UInt8], _ match: Match) -> Bool {
        switch match {
        case .none:
            return false
        case .second(let start):
            return entryTime(record).map { $0 - $0 % 1_000_000_000 == start } ?? false
        case .lineLength(let length):
            // The line is no longer than its encoded record: most records are skipped unread.
            guard record.count > length,
                let entry = try? JSONSerialization.jsonObject(with: Data(record)) as? [Any], entry.count >= 2,
                let line = entry[1] as? String
            else { return false }
            return line.utf8.count == length
        }
    }

    // MARK: The ingester's list

    /// `total ignored: N out of M`.
    static func totals(in text: String) -> (ignored: Int, total: Int)? {
        guard let range = text.range(of: "total ignored: ") else { return nil }
        let rest = text[range.upperBound...]
        let ignoredDigits = rest.prefix { $0.isASCII && $0.isNumber }
        let afterIgnored = rest.dropFirst(ignoredDigits.count)
        guard let ignored = Int(ignoredDigits), afterIgnored.hasPrefix(" out of "),
            let total = Int(afterIgnored.dropFirst(8).prefix { $0.isASCII && $0.isNumber })
        else { return nil }
        return (ignored, total)
    }

    /// The entries the answer names: `entry with timestamp T ignored, reason: 'R' for stream: …`.
    static func entries(in text: String) -> [(time: Int64, reason: String)] {
        var found: [(time: Int64, reason: String)] = []
        for line in text.split(separator: "\n") {
            guard let start = line.range(of: "entry with timestamp "),
                let ignored = line.range(of: " ignored, reason: '", range: start.upperBound..<line.endIndex),
                let time = LokiTimestamp.nanoseconds(String(line[start.upperBound..<ignored.lowerBound]))
            else { continue }
            var reason = line[ignored.upperBound...]
            if let end = reason.range(of: "' for stream: ", options: .backwards) { reason = reason[..<end.lowerBound] }
            found.append((time, String(reason)))
        }
        return found
    }

    /// The time of a Loki entry record `["<ns>",…`.
    static func entryTime(_ record: [UInt8]) -> Int64? {
        guard record.count > 2, record[0] == UInt8(ascii: "["), record[1] == UInt8(ascii: "\"") else { return nil }
        var value: Int64 = 0
        for byte in record[2...] {
            if byte == UInt8(ascii: "\"") { return value }
            guard (0x30...0x39).contains(byte) else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times + Int64(byte - 0x30)
        }
        return nil
    }
}
