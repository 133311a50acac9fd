import Foundation
import StreamUpTestSupport
import Testing

/// A validating stand-in for a log receiver (`Tests/Receivers/receiver.py KIND`, written from
/// each receiver's published API documentation) for one test: started on a free loopback port,
/// read back through `GET /_validator/records`, stopped by the test.
///
/// Thread safety: used from one test's task.
final class ReceiverValidator: Sendable {
    /// What the receiver stored, refused and found wrong.
    struct Snapshot {
        /// Ingestion requests it got.
        var requests: Int
        /// Each stored record's line, as bytes (Python's surrogateescape undoes `\udcXX`), in
        /// the receiver's own order where it has one (``ordered``), else as they arrived.
        var lines: [[UInt8]]
        /// Whether ``lines`` is in the receiver's own order, the one its queries give: Loki's and
        /// OTLP's nanosecond times (unique and increasing as streamup writes them),
        /// Elasticsearch's `_id`s (the stream and offset, or the file and position, of each
        /// record). Elsewhere records of requests out at once may arrive in any order, and
        /// only the multiset of records is what a user can rely on (``holds(_:)``).
        var ordered: Bool
        /// The first stored records (strings that held such escapes are shown with U+FFFD).
        var records: [[String: Any]]
        /// Per top-level field of the stored records: the JSON types its values had, and its
        /// distinct values when they are a few strings.
        var fields: [String: (types: Set<String>, values: Set<String>)]
        /// The lines of the records it refused (test-chosen rejections).
        var rejectedLines: [[UInt8]]
        /// Every way the client broke the receiver's documented contract: empty for a correct one.
        var errors: [String]

        var text: [String] { lines.map { String(decoding: $0, as: UTF8.self) } }

        /// Whether it holds `expected`, each record once: in that order where the receiver
        /// keeps one (``ordered``), else in any order.
        func holds(_ expected: [[UInt8]]) -> Bool {
            ordered ? lines == expected : Self.sorted(lines) == Self.sorted(expected)
        }

        /// ``holds(_:)`` for text.
        func holds(text expected: [String]) -> Bool { holds(expected.map { Array($0.utf8) }) }

        static func sorted(_ lines: [[UInt8]]) -> [[UInt8]] { lines.sorted { $0.lexicographicallyPrecedes($1) } }
    }

    let url: URL
    private let process: StreamupProcess

    private init(url: URL, process: StreamupProcess) {
        self.url = url
        self.process = process
    }

    /// Runs `body` with a fresh validator of `kind` started with `options`.
    static func with<T>(_ kind: String, _ options: [String] = [], _ body: (ReceiverValidator) async throws -> T) async throws -> T {
        let process = try PythonScript.start("receiver.py", [kind, "--port", "0"] + options)
        // Signal only after the first line: `python3` may be a shim that is not the server yet.
        guard let line = await process.firstLine(), line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst(13))) else {
            process.signal(SIGTERM)
            _ = await process.waitForExit()
            throw ValidatorError(message: "the \(kind) validator did not start: \(process.stderr)")
        }
        let validator = ReceiverValidator(url: url, process: process)
        let result: Result<T, Error>
        do {
            result = .success(try await body(validator))
        } catch {
            result = .failure(error)
        }
        process.signal(SIGTERM)
        _ = await process.waitForExit()
        return try result.get()
    }

    /// What it holds now, read by Python (so lines come back byte for byte). Python does the
    /// heavy part (megabytes of records) on a thread of its own; what comes back is small.
    func snapshot() async throws -> Snapshot {
        let program = #"""
            import base64, json, re, sys, urllib.request
            data = json.load(urllib.request.urlopen(sys.argv[1] + "/_validator/records"))
            def raw(s):
                return base64.b64encode(s.encode("utf-8", "surrogateescape")).decode() if isinstance(s, str) else ""
            def clean(v):
                if isinstance(v, str):
                    return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                if isinstance(v, list):
                    return [clean(x) for x in v]
                if isinstance(v, dict):
                    return {clean(k): clean(x) for k, x in v.items()}
                return v
            # The receiver's own order: Loki's and OTLP's nanosecond times; Elasticsearch's
            # _id, STREAM-OFFSET (a UUID stream) or DEVICE-INODE-FINGERPRINT-START-PIECE-TIME.
            stream_id = re.compile(r"^([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})-([0-9]+)$")
            def key(r):
                kind = data["kind"]
                if kind == "loki":
                    return [int(r["ts"])]
                if kind == "otlp":
                    return [int(r["timeUnixNano"])]
                if kind in ("elasticsearch", "opensearch") and isinstance(r.get("id"), str):
                    m = stream_id.match(r["id"])
                    if m:
                        return [m.group(1), int(m.group(2))]
                    parts = r["id"].split("-")
                    if len(parts) == 6 and parts[3].isdigit() and parts[4].isdigit():
                        return ["-".join(parts[:3]), int(parts[3]), int(parts[4])]
                return None
            keys = [key(r) for r in data["records"]]
            ordered = bool(keys) and all(k is not None for k in keys)
            if ordered:
                data["records"] = [r for _, _, r in sorted(zip(keys, range(len(keys)), data["records"]), key=lambda t: (t[0], t[1]))]
            fields = {}
            for r in data["records"]:
                for k, v in r.items():
                    f = fields.setdefault(k, {"types": set(), "values": set()})
                    f["types"].add(type(v).__name__)
                    if isinstance(v, str) and len(f["values"]) <= 10:
                        f["values"].add(clean(v))
            json.dump({"requests": data["requests"], "ordered": ordered,
                       "lines": "\n".join(raw(r.get("line")) for r in data["records"]),
                       "records": clean(data["records"][:20]),
                       "fields": {k: {"types": sorted(f["types"]), "values": sorted(f["values"]) if len(f["values"]) <= 10 else []}
                                  for k, f in fields.items()},
                       "rejected": "\n".join(raw(r.get("line")) for r in data["rejected"]),
                       "errors": ["request %s: %s %s" % (e["request"], e["status"], clean(e["reason"])) for e in data["errors"]]},
                      sys.stdout)
            """#
        let (status, data, problem) = try await PythonScript.run(program, [url.absoluteString])
        guard status == 0, let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ValidatorError(message: "cannot read the validator: \(String(decoding: problem, as: UTF8.self))")
        }
        func lines(_ key: String) -> [[UInt8]] {
            let text = object[key] as? String ?? ""
            guard !text.isEmpty else { return [] }
            return text.split(separator: "\n", omittingEmptySubsequences: false).map { Array(Data(base64Encoded: String($0)) ?? Data()) }
        }
        var fields: [String: (types: Set<String>, values: Set<String>)] = [:]
        for (name, value) in object["fields"] as? [String: [String: [String]]] ?? [:] {
            fields[name] = (Set(value["types"] ?? []), Set(value["values"] ?? []))
        }
        return Snapshot(
            requests: object["requests"] as? Int ?? -1, lines: lines("lines"), ordered: object["ordered"] as? Bool ?? false,
            records: object["records"] as? [[String: Any]] ?? [],
            fields: fields, rejectedLines: lines("rejected"), errors: object["errors"] as? [String] ?? ["no errors list"])
    }
}

/// A validator could not be started or read.
///
/// Thread safety: a value type.
struct ValidatorError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
