import StreamUpTestSupport

/// Log-like text for compression and formatting tests: lines shaped like an access/application
/// log (timestamp, level, logger, request, status, latency, ids), varied by a seeded generator.
///
/// Thread safety: stateless.
enum LogLines {
    static func make(count: Int, seed: UInt64 = 1) -> [[UInt8]] {
        var random = SeededRandom(seed: seed)
        let levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
        let paths = ["/api/v1/items", "/api/v1/users", "/healthz", "/api/v2/orders", "/static/app.js", "/login"]
        let methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE"]
        let statuses = [200, 200, 200, 201, 204, 301, 404, 500]
        var milliseconds = 1_767_225_600_000 + Int.random(in: 0..<86_400_000, using: &random)
        return (0..<count).map { index in
            milliseconds += Int.random(in: 0..<40, using: &random)
            let second = milliseconds / 1000 % 86_400
            func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let fraction = String(1000 + milliseconds % 1000).dropFirst()
            let time = "2026-01-01T\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60)).\(fraction)Z"
            let level = levels.randomElement(using: &random)!
            let worker = Int.random(in: 1...8, using: &random)
            let method = methods.randomElement(using: &random)!
            let path = paths.randomElement(using: &random)!
            let item = Int.random(in: 1...99_999, using: &random)
            let status = statuses.randomElement(using: &random)!
            let latency = Double(Int.random(in: 1...25_000, using: &random)) / 100
            let request = String(random.next() & 0xFFFF_FFFF, radix: 16)
            let user = ["alice", "bob", "carol", "dave", "-"].randomElement(using: &random)!
            let line =
                "\(time) \(level) [worker-\(worker)] \(method) \(path)/\(item) \(status) \(latency)ms "
                + "user=\(user) req=\(request) seq=\(index)"
            return Array(line.utf8)
        }
    }

    /// The lines joined, each ending in `\n`.
    static func text(count: Int, seed: UInt64 = 1) -> [UInt8] {
        make(count: count, seed: seed).flatMap { $0 + [0x0A] }
    }
}
