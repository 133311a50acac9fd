/// Reads a Loki push answer. Loki validates entry by entry and stores the valid ones; when some
/// fail it answers 400 with one line per ignored entry and a total:
///
///     entry with timestamp 2026-11-22 08:15:30.123 +0000 UTC ignored, reason: 'entry too far behind, …' for stream: {job="x"},
///     user 'fake', total ignored: 1 out of 120
///
/// (https://grafana.com/docs/loki/latest/operations/troubleshooting/troubleshoot-ingest/; the
/// layout of the lines is grafana/loki's distributor, `pkg/distributor/validator.go` and
/// `distributor.go`, where the docs are silent).
///
/// The lines name entries by timestamp, and streamup's Loki entries have unique nanosecond
/// times (``RecordShape/lokiEntry``), so each named entry is found among the request's records.
/// When the lines do not account for every ignored entry (a label problem that ignored the
/// whole stream, an answer cut at the response limit) or a time matches no single record, the
/// whole request is kept, and the summary says so.
///
/// Thread safety: stateless.
enum LokiAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.statusCode == 400 else { return nil }
        let text = answer.bodyText
        guard let (ignored, total) = totals(in: text) else { return nil }
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
                summary: "Loki ignored \(ignored) of \(total) entries and named \(rejected.count) of them in its answer; the whole request is kept, its other entries were stored")
        }
        let first = rejected.first.map { ": \($0.reason)" } ?? ""
        return PartialFailure(rejected: rejected, summary: "Loki ignored \(ignored) of \(total) entries\(first)")
    }

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
