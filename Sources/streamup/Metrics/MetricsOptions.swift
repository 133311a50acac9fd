import Foundation
import StreamUp
import StreamUpSink

/// `--metrics [ADDR:]PORT` and `--unhealthy-after DURATION`: where the uploader's own metrics
/// and health are served (``Metrics``), for `streamup URL`, `tail` and `heartbeat`.
///
/// Thread safety: a value type.
struct MetricsOptions: Sendable, Equatable {
    /// Where to listen; nil: no metrics server.
    var host: String?
    var port: UInt16 = 0
    var unhealthyAfter: Duration = defaultUnhealthyAfter

    static let defaultUnhealthyAfter: Duration = .seconds(60)

    static let table: [OptionSpec<MetricsOptions>] = [
        .value(
            "--metrics", valueName: "[ADDR:]PORT",
            group: .output, help: "serve GET /metrics and /health on 127.0.0.1:PORT or ADDR:PORT"
        ) { options, value throws(UsageError) in
            (options.host, options.port) = try parseAddress(value)
        },
        .value(
            "--unhealthy-after", valueName: "DURATION",
            group: .output, help: "/health answers 503 after failing this long (default 60s)"
        ) { options, value throws(UsageError) in
            options.unhealthyAfter = try parseDuration(value, option: "--unhealthy-after")
        },
    ]

    /// `9400` → 127.0.0.1:9400; `ADDR:9400` and `[V6]:9400` as given.
    static func parseAddress(_ text: String) throws(UsageError) -> (host: String, port: UInt16) {
        let problem = UsageError("--metrics: '\(text)' is not PORT, ADDR:PORT or [IPV6]:PORT (e.g. 9400, 0.0.0.0:9400)")
        guard let colon = text.lastIndex(of: ":") else {
            guard let port = UInt16(text) else { throw problem }
            return ("127.0.0.1", port)
        }
        var host = String(text[..<colon])
        guard let port = UInt16(text[text.index(after: colon)...]) else { throw problem }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("[") && !host.contains("]") else { throw problem }
        return (host, port)
    }

    /// The metrics server: the sink's HTTP server answering with `metrics` (``SinkResponder``),
    /// at most 8 connections, a request head within 2 s, nothing stored or kept.
    func server(for metrics: Metrics) throws(SinkError) -> SinkServer? {
        try server(responder: { method, target in metrics.answer(method, target) })
    }

    /// The metrics server answering with `responder` (as above).
    func server(responder: @escaping @Sendable (String, String) -> SinkAnswer) throws(SinkError) -> SinkServer? {
        guard let host else { return nil }
        let configuration = SinkConfiguration(
            host: host, port: port, hashBodies: false, maxHeaderBytes: 8_192, maxConnections: 8, idleTimeout: .seconds(10),
            readBufferSize: 4_096, recentEventLimit: 0, maxBodyBytes: 65_536, headTimeout: .seconds(2))
        let server = try SinkServer(configuration: configuration, responder: responder)
        server.start()
        return server
    }
}
