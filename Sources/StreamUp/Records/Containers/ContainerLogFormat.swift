import Foundation

/// The log files container runtimes write (`--parse`): each line wraps a piece of what the
/// container wrote, with the time and the stream it came from.
///
/// - ``cri``: Kubernetes (containerd, CRI-O) under `/var/log/pods/`: `TIME STREAM P|F MESSAGE`,
///   a long line written as `P` (partial) pieces ended by an `F` (full) piece.
/// - ``docker``: Docker's `json-file` driver: `{"log":"…\n","stream":"stdout","time":"…"}`, a
///   line over 16 KiB written as pieces, the last one ending in `\n`.
///
/// Thread safety: a value type.
package enum ContainerLogFormat: String, Sendable, CaseIterable {
    case cri
    case docker
}

/// One line of a container log, taken apart (`ContainerLogFormat`).
///
/// Thread safety: a value type.
struct ContainerLogLine: Equatable {
    /// What the container wrote (without the `\n` it ended with).
    var message: [UInt8]
    /// `stdout` or `stderr`.
    var stream: String
    /// The time the runtime gave it, in nanoseconds since 1970, as precise as the runtime wrote
    /// it (nil: none readable).
    var nanoseconds: Int64?
    /// Whether more of the same line follows (CRI `P`; Docker: no `\n` at the end).
    var partial: Bool

    /// Takes `line` (without its `\n`) apart; nil when it is not a line of `format`.
    static func parse(_ line: UnsafeRawBufferPointer, as format: ContainerLogFormat) -> ContainerLogLine? {
        switch format {
        case .cri: cri(line)
        case .docker: docker(line)
        }
    }

    /// `2026-11-25T10:00:00.123456789Z stdout F message`.
    private static func cri(_ line: UnsafeRawBufferPointer) -> ContainerLogLine? {
        var fields: [Range<Int>] = []
        var start = 0
        for index in 0..<line.count where line[index] == 0x20 && fields.count < 3 {
            fields.append(start..<index)
            start = index + 1
        }
        guard fields.count == 3 else { return nil }
        let tag = line[fields[2].lowerBound..<fields[2].upperBound]
        // The tag is P or F, or F:…/P:… with more flags after a colon in later versions.
        guard let flag = tag.first, flag == UInt8(ascii: "P") || flag == UInt8(ascii: "F") else { return nil }
        return ContainerLogLine(
            message: Array(line[start...]), stream: String(decoding: line[fields[1]], as: UTF8.self),
            nanoseconds: RFC3339Parser.nanoseconds(UnsafeRawBufferPointer(rebasing: line[fields[0]])), partial: flag == UInt8(ascii: "P"))
    }

    /// `{"log":"message\n","stream":"stdout","time":"2026-11-25T10:00:00.123456789Z"}`.
    private static func docker(_ line: UnsafeRawBufferPointer) -> ContainerLogLine? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], let log = object["log"] as? String else {
            return nil
        }
        var message = Array(log.utf8)
        let partial = message.last != 0x0A
        if !partial { message.removeLast() }
        let time = (object["time"] as? String).flatMap { text in Array(text.utf8).withUnsafeBytes { RFC3339Parser.nanoseconds($0) } }
        return ContainerLogLine(message: message, stream: object["stream"] as? String ?? "stdout", nanoseconds: time, partial: partial)
    }
}

/// Reads RFC 3339 times as runtimes write them (`2026-11-25T10:00:00.123456789Z`, or with an
/// offset such as `+01:00`), to nanoseconds since 1970: every digit of the fraction up to the
/// ninth counts, further ones are dropped.
///
/// Thread safety: stateless.
enum RFC3339Parser {
    static func nanoseconds(_ text: UnsafeRawBufferPointer) -> Int64? {
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= text.count else { return nil }
            var value: Int64 = 0
            for index in range {
                let digit = text[index] &- 0x30
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard text.count >= 20, let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if text[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < text.count, text[index] &- 0x30 < 10 {
                if digits < 9 { fraction = fraction * 10 + Int64(text[index] - 0x30) }
                digits += 1
                index += 1
            }
            while digits < 9 {
                fraction *= 10
                digits += 1
            }
        }
        guard index < text.count else { return nil }
        var offset: Int64 = 0
        switch text[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"): break
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let hours = number(index + 1..<index + 3), let minutes = number(index + 4..<index + 6) else { return nil }
            offset = (hours * 60 + minutes) * 60 * (text[index] == UInt8(ascii: "+") ? 1 : -1)
        default: return nil
        }
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        // Times after 2262 do not fit: they are taken as none.
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, beyond) = scaled.addingReportingOverflow(fraction)
        return overflow || beyond ? nil : sum
    }
}

/// The Kubernetes names in a container log's path: `namespace`, `pod`, `container`, from
/// `/var/log/pods/NAMESPACE_POD_UID/CONTAINER/N.log` or
/// `/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log` (names cannot hold `_`).
///
/// Thread safety: stateless.
package enum ContainerPath {
    package static func fields(of path: String) -> [(name: String, value: String)] {
        let parts = path.split(separator: "/").map(String.init)
        if let pods = parts.lastIndex(of: "pods"), pods + 3 < parts.count {
            let names = parts[pods + 1].split(separator: "_", omittingEmptySubsequences: false)
            guard names.count >= 3 else { return [] }
            return [("namespace", String(names[0])), ("pod", String(names[1])), ("container", parts[pods + 2])]
        }
        if let containers = parts.lastIndex(of: "containers"), containers + 1 < parts.count, parts[containers + 1].hasSuffix(".log") {
            let names = parts[containers + 1].dropLast(4).split(separator: "_", omittingEmptySubsequences: false)
            guard names.count == 3, let dash = names[2].lastIndex(of: "-") else { return [] }
            return [("namespace", String(names[1])), ("pod", String(names[0])), ("container", String(names[2][..<dash]))]
        }
        return []
    }
}
