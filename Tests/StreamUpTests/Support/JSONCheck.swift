import Foundation
import StreamUpTestSupport
import Testing

/// Parses records with Python's `json` module, an independent decoder.
///
/// Thread safety: stateless.
enum JSONCheck {
    /// What Python found in one record line.
    struct Record {
        /// The line parsed as JSON (strict UTF-8, standard JSON only, no duplicate keys).
        var parsed: Bool
        /// Python's error when it did not.
        var error: String?
        /// The object's keys, in order.
        var keys: [String]
        /// The string values, by key.
        var strings: [String: String]
        /// The value of the message key, turned back into bytes with surrogateescape.
        var message: [UInt8]?
        /// The value of the time key read as RFC 3339 (`%Y-%m-%dT%H:%M:%S.%fZ`), in milliseconds;
        /// nil when there is none in that form.
        var timeMilliseconds: Int64?
        /// The object as Python re-serializes it (sorted keys), to compare values.
        var canonical: String?
    }

    private static let program = #"""
        import sys, json, datetime
        message_key, time_key = sys.argv[1], sys.argv[2]
        def pairs(items):
            keys = [k for k, _ in items]
            if len(set(keys)) != len(keys):
                raise ValueError("duplicate keys %r" % keys)
            return dict(items)
        def constant(name):
            raise ValueError("not JSON: " + name)
        out = []
        for raw in sys.stdin.buffer.read().split(b"\n")[:-1]:
            try:
                text = raw.decode("utf-8")  # strict: the record itself must be valid UTF-8
                value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
                if not isinstance(value, dict):
                    raise ValueError("not an object")
                keys = list(json.loads(text, object_pairs_hook=lambda items: [k for k, _ in items]))
                record = {"parsed": True, "keys": keys,
                          "strings": {k: v for k, v in value.items() if isinstance(v, str) and k != message_key},
                          "canonical": json.dumps(value, sort_keys=True)}
                if isinstance(value.get(message_key), str):
                    record["message"] = value[message_key].encode("utf-8", "surrogateescape").hex()
                try:
                    t = datetime.datetime.strptime(value[time_key], "%Y-%m-%dT%H:%M:%S.%fZ")
                    t = t.replace(tzinfo=datetime.timezone.utc)
                    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
                    record["time_ms"] = (t - epoch) // datetime.timedelta(milliseconds=1)
                except (KeyError, TypeError, ValueError):
                    pass  # no time, or not one in our format (a line's own "time" wins)
            except Exception as error:
                record = {"parsed": False, "error": repr(error)}
            out.append(record)
        json.dump(out, sys.stdout)
        """#

    /// Parses each `\n`-terminated line of `records`.
    static func parse(_ records: [UInt8], messageKey: String = "message", timeKey: String = "time") throws -> [Record] {
        let result = try ExternalTool.python(program, [messageKey, timeKey], input: records)
        #expect(result.status == 0, "python3 json check failed: \(result.errorText)")
        guard let list = try JSONSerialization.jsonObject(with: Data(result.output)) as? [[String: Any]] else {
            Issue.record("python3 json check printed no list")
            return []
        }
        return list.map { item in
            Record(
                parsed: item["parsed"] as? Bool ?? false, error: item["error"] as? String,
                keys: item["keys"] as? [String] ?? [], strings: item["strings"] as? [String: String] ?? [:],
                message: (item["message"] as? String).map(Self.bytes(hex:)),
                timeMilliseconds: (item["time_ms"] as? NSNumber)?.int64Value, canonical: item["canonical"] as? String)
        }
    }

    private static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! }
    }
}
