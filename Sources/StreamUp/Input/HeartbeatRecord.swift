import Foundation

/// Makes the NDJSON records of one heartbeat: `ts`, `seq`, `host`, `pid`, `uptime_s`,
/// `skipped`, the heartbeat's fields, then a final record's extra fields, for
/// ``HeartbeatProducer`` (which ``TelemetryEmitter/startHeartbeat(every:fields:)`` runs too).
///
/// Thread safety: a value type, used by the one task that runs the heartbeat.
struct HeartbeatRecord: Sendable {
    let fields: [(name: String, value: String)]
    private let startDate = Date()
    private let host = ProcessInfo.processInfo.hostName
    private let pid = Int(ProcessInfo.processInfo.processIdentifier)

    init(fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// Record number `seq`, saying that `skipped` beats before it did not fit in the buffer.
    func bytes(seq: Int, skipped: Int, extra: [(name: String, value: JSONValue)] = []) -> [UInt8] {
        var line = JSONLine()
        line.add("ts", RFC3339.string(from: Date()))
        line.add("seq", seq)
        line.add("host", host)
        line.add("pid", pid)
        line.add("uptime_s", Date().timeIntervalSince(startDate), decimals: 3)
        line.add("skipped", skipped)
        for field in fields { line.add(field.name, field.value) }
        for field in extra { field.value.add(to: &line, as: field.name) }
        return line.bytes
    }
}
