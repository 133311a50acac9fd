import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// Checks records of a ``RecordShape`` with Python's `json` module (an independent, strict
/// decoder) against the receiver's schema, and reads each record's line back as bytes.
///
/// Thread safety: stateless.
enum ShapeCheck {
    /// What Python found in one record.
    struct Record {
        /// Empty when the record fits the shape's schema; else why not.
        var problems: [String]
        /// The line, turned back into bytes with surrogateescape.
        var message: [UInt8]?
        /// The record parsed and re-serialized by Python (sorted keys), to compare values.
        var canonical: String
    }

    /// The schema of each shape, as the receivers' documentation states it (cited in
    /// `Receiver+Presets.swift`), and where the line is.
    private static let program = #"""
        import sys, json, re
        shape = sys.argv[1]
        def pairs(items):
            keys = [k for k, _ in items]
            if len(set(keys)) != len(keys):
                raise ValueError("duplicate keys %r" % keys)
            return dict(items)
        def constant(name):
            raise ValueError("not JSON: " + name)
        RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")
        def number(v):
            return isinstance(v, (int, float)) and not isinstance(v, bool)
        def strings(d):
            return isinstance(d, dict) and all(isinstance(v, str) for v in d.values())
        def check(v, problems):
            if shape == "lokiEntry":
                if not isinstance(v, list) or len(v) not in (2, 3):
                    problems.append("not [ts, line] or [ts, line, {metadata}]"); return None
                if not isinstance(v[0], str) or not re.fullmatch(r"[0-9]{1,19}", v[0]):
                    problems.append("timestamp is not a string of nanoseconds")
                if len(v) == 3 and not strings(v[2]):
                    problems.append("structured metadata is not an object of strings")
                return v[1]
            if not isinstance(v, dict):
                problems.append("not an object"); return None
            if shape == "otlpLogRecord":
                known = {"timeUnixNano", "observedTimeUnixNano", "body", "attributes"}
                if set(v) - known: problems.append("unknown keys %r" % (set(v) - known))
                for k in ("timeUnixNano", "observedTimeUnixNano"):
                    if not isinstance(v.get(k), str) or not re.fullmatch(r"[0-9]+", v[k]):
                        problems.append(k + " is not an int64 as a decimal string")
                for a in v.get("attributes", []):
                    if set(a) != {"key", "value"} or not isinstance(a["key"], str) or set(a["value"]) != {"stringValue"}:
                        problems.append("attribute %r is not a KeyValue of a string" % a)
                body = v.get("body")
                if not isinstance(body, dict) or set(body) != {"stringValue"}:
                    problems.append("body is not an AnyValue string"); return None
                return body["stringValue"]
            if shape == "splunkEvent":
                if not number(v.get("time")): problems.append("time is not epoch seconds")
                for k in ("host", "source", "sourcetype", "index"):
                    if k in v and not isinstance(v[k], str): problems.append(k + " is not a string")
                if "fields" in v and not strings(v["fields"]): problems.append("fields is not flat")
                return v.get("event")
            if shape == "datadogLog":
                for k in ("ddsource", "ddtags", "hostname", "service", "date"):
                    if k in v and not isinstance(v[k], str): problems.append(k + " is not a string")
                if "date" in v and not RFC3339.match(v["date"]): problems.append("date is not RFC 3339")
                return v.get("message")
            if shape == "fluentBitRecord":
                if not number(v.get("date")): problems.append("date is not epoch seconds")
                return v.get("log")
            if shape == "elasticsearchDocument":
                if not isinstance(v.get("@timestamp"), str) or not RFC3339.match(v["@timestamp"]):
                    problems.append("@timestamp is not RFC 3339")
                return v.get("message")
            if shape == "clickHouseRow":
                if not isinstance(v.get("time"), int) or isinstance(v.get("time"), bool): problems.append("time is not whole seconds")
                return v.get("message")
            return v.get("message")
        out = []
        for raw in sys.stdin.buffer.read().split(b"\n")[:-1]:
            problems = []
            message = None
            canonical = ""
            try:
                value = json.loads(raw.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
                canonical = json.dumps(value, sort_keys=True)
                line = check(value, problems)
                if isinstance(line, str):
                    message = line.encode("utf-8", "surrogateescape").hex()
                else:
                    problems.append("the line is not a string")
            except Exception as error:
                problems.append(repr(error))
            out.append({"problems": problems, "message": message, "canonical": canonical})
        json.dump(out, sys.stdout)
        """#

    /// Checks each `\n`-terminated record of `records` against `shape`. Python runs while a
    /// thread of its own waits, never one of the few threads the tests running in parallel
    /// share (a test that waits there for seconds starves the others' polls).
    static func check(_ records: [UInt8], shape: RecordShape) async throws -> [Record] {
        let result = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ExternalTool.Result, Error>) in
            Thread.detachNewThread {
                continuation.resume(with: Result { try ExternalTool.python(program, [shape.rawValue], input: records) })
            }
        }
        #expect(result.status == 0, "python3 shape check failed: \(result.errorText)")
        guard let list = try JSONSerialization.jsonObject(with: Data(result.output)) as? [[String: Any]] else {
            Issue.record("python3 shape check printed no list")
            return []
        }
        return list.map { item in
            Record(
                problems: item["problems"] as? [String] ?? ["no answer"], message: (item["message"] as? String).map(bytes(hex:)),
                canonical: item["canonical"] as? String ?? "")
        }
    }

    private static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! }
    }
}
