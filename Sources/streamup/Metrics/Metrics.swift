import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpSystem

/// What `--metrics` serves: `/metrics` in the Prometheus text format (version 0.0.4) and
/// `/health`. Requests by endpoint and status class, the last success and how long delivery
/// has been failing are counted from the uploader's events (``record(_:now:date:)``, fed by
/// the runner before it logs each one); the rest is read from the uploader when scraped
/// (``Gauges``, through the closure given to ``attach(_:)``).
///
/// Requests are paired with their answers in order: a reliable upload sends one request at a
/// time. A request that ends without an answer (refused, reset, timed out) counts as
/// `status="none"` when the next request starts or its retry is announced.
///
/// Owned by the runner of one upload (``UploadRunner``), which creates it, feeds it and stops
/// its server; scrapes read it on the metrics server's connection threads.
/// Thread safety: `state` is a `Mutex`; `gauges` and the formatting run outside it.
final class Metrics: Sendable {
    /// What the uploader itself counts, read at each scrape.
    struct Gauges {
        var linesRead = 0
        var bytesRead = 0
        var bytesDelivered = 0
        var bytesResent = 0
        var retries = 0
        var deadLetters = 0
        var deadLetterBytes = 0
        var recordsRefused = 0
        var heldBytes = 0
        var capacityBytes = 0
        /// `memory` or `spool`.
        var storage = "memory"
        var oldestUnacknowledged: Duration = .zero
        /// Files followed (tail); nil for other inputs.
        var filesFollowed: Int?
        /// Records left out by --drop and --keep; nil without them.
        var recordsDropped: Int?
        /// Records sent with their message masked whole: their filters did not finish.
        var recordsMasked: Int?
        /// Segment requests out now, and how many may be (the window, up to --max-in-flight).
        var requestsInFlight = 0
        var requestWindow = 1
    }

    /// One series of `streamup_requests_total`.
    struct RequestKey: Hashable, Comparable {
        var endpoint: String
        var status: String

        static func < (a: RequestKey, b: RequestKey) -> Bool { (a.endpoint, a.status) < (b.endpoint, b.status) }
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        /// The endpoint of the request that has not been answered yet.
        var pending: String?
        var lastEndpoint: String?
        /// Unix time of the last 2xx.
        var lastSuccess: Double?
        var failingSince: ContinuousClock.Instant?
        var failure = ""
        var gauges: (@Sendable () -> Gauges)?
        var durations = RequestDurations()
        var delivered = DeliveredRecords()
    }

    /// `/health` answers 503 once delivery has failed for this long without a success.
    let unhealthyAfter: Duration
    private let state = Mutex(State())

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    init(unhealthyAfter: Duration) {
        self.unhealthyAfter = unhealthyAfter
    }

    /// Reads the uploader's own counts from `gauges` at each scrape (until then: zeros).
    func attach(_ gauges: @escaping @Sendable () -> Gauges) {
        state.withLock { $0.gauges = gauges }
    }

    // MARK: Counting

    /// Counts what `event` says about requests, answers and failures.
    func record(_ event: UploadEvent, now: ContinuousClock.Instant = .now, date: Date = Date()) {
        // Where the input stood when a request started (read outside the lock: it asks the uploader).
        var read: (bytes: Int, lines: Int)?
        if case .requestStarted = event.detail, let gauges = state.withLock({ $0.gauges }) {
            let counts = gauges()
            read = (counts.bytesRead, counts.linesRead)
        }
        state.withLock { state in
            switch event.detail {
            case .requestStarted(_, let url, _):
                Self.endUnanswered(&state)
                let endpoint = Self.endpoint(of: url)
                state.pending = endpoint
                state.lastEndpoint = endpoint
                state.durations.requestStarted(at: now)
                if let read { state.delivered.note(bytesRead: read.bytes, linesRead: read.lines) }
            case .responseReceived(let status, _):
                // Interim answers (100, 104) are not the request's answer.
                guard status >= 200 else { return }
                let endpoint = state.pending ?? state.lastEndpoint ?? "unknown"
                state.pending = nil
                state.requests[RequestKey(endpoint: endpoint, status: "\(status / 100)xx"), default: 0] += 1
                state.durations.answered(at: now)
                if (200..<300).contains(status) {
                    state.lastSuccess = date.timeIntervalSince1970
                    state.failingSince = nil
                }
            case .retrying(let reason, _, _, _):
                Self.endUnanswered(&state)
                state.durations.unanswered()
                if state.failingSince == nil { state.failingSince = now }
                state.failure = reason
            case .recovered:
                state.failingSince = nil
            case .redirectRefused, .deadLettered, .recordsRejected, .notice, .source, .gaveUp:
                break
            }
        }
    }

    /// The request in flight ended without an answer.
    private static func endUnanswered(_ state: inout State) {
        guard let endpoint = state.pending else { return }
        state.pending = nil
        state.requests[RequestKey(endpoint: endpoint, status: "none"), default: 0] += 1
    }

    /// `host:port` of `url` (the scheme's port when it names none).
    static func endpoint(of url: URL) -> String {
        let host = url.host ?? "?"
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return (host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host) + ":\(port)"
    }

    // MARK: Health

    /// How long delivery has been failing without a success (zero when it is not).
    func failingFor(now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { $0.failingSince.map { now - $0 } } ?? .zero
    }

    /// `/health`: 200 while delivering or idle, 503 once delivery has failed ``unhealthyAfter``.
    func health(now: ContinuousClock.Instant = .now) -> (healthy: Bool, text: String) {
        let (since, failure) = state.withLock { ($0.failingSince, $0.failure) }
        guard let since else { return (true, "ok\n") }
        let failing = now - since
        let seconds = String(format: "%.1f", failing.seconds)
        guard failing >= unhealthyAfter else { return (true, "ok (failing for \(seconds)s: \(failure))\n") }
        return (false, "delivery failing for \(seconds)s (--unhealthy-after \(UploadRunner.short(unhealthyAfter))): \(failure)\n")
    }

    // MARK: Serving

    /// The answer to `method target` (the metrics server's ``SinkResponder``).
    func answer(_ method: String, _ target: String) -> SinkAnswer {
        guard method == "GET" || method == "HEAD" else {
            return SinkAnswer(status: 405, body: "GET or HEAD only\n", headers: [SinkHeaderField(name: "Allow", value: "GET, HEAD")])
        }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? target
        switch path {
        case "/metrics":
            return SinkAnswer(status: 200, contentType: Self.contentType, body: MetricFamily.render(families() + ProcessMetrics.families()))
        case "/health":
            let (healthy, text) = health()
            return SinkAnswer(status: healthy ? 200 : 503, body: text)
        default:
            return SinkAnswer(status: 404, body: "not found: /metrics and /health are served here\n")
        }
    }

    /// Every metric, in the Prometheus text exposition format 0.0.4.
    func exposition(now: ContinuousClock.Instant = .now) -> String {
        MetricFamily.render(families(now: now))
    }

    /// Every metric of the upload, as families with their labels.
    func families(now: ContinuousClock.Instant = .now) -> [MetricFamily] {
        let source = state.withLock { $0.gauges }
        let gauges = source?() ?? Gauges()
        let (requests, lastSuccess, durations, recordsDelivered) = state.withLock { state in
            let delivered = state.delivered.count(bytesDelivered: gauges.bytesDelivered, bytesRead: gauges.bytesRead, linesRead: gauges.linesRead)
            return (state.requests, state.lastSuccess, state.durations, delivered)
        }
        let failing = failingFor(now: now)
        typealias Family = MetricFamily
        let storage = [MetricFamily.Label(name: "storage", value: gauges.storage)]
        var families: [MetricFamily] = [
            .counter(
                "streamup_lines_read_total", "Lines (records ending in a newline) read from the input in this run, those --drop and --keep left out included.",
                gauges.linesRead + (gauges.recordsDropped ?? 0)),
            .counter("streamup_bytes_read_total", "Bytes of records read in this run, as sent (after formatting, before gzip).", gauges.bytesRead),
            .counter("streamup_bytes_delivered_total", "Bytes of this run the receiver acknowledged (with --single-request: sent).", gauges.bytesDelivered),
            .counter(
                "streamup_records_delivered_total", "Records (lines) of this run the receiver acknowledged, counted as of each request's start.",
                recordsDelivered),
            .counter("streamup_bytes_resent_total", "Bytes sent more than once (after a failed or unanswered request).", gauges.bytesResent),
            Family(
                name: "streamup_requests_total", kind: .counter, help: "Requests by endpoint (host:port) and status class (2xx..5xx; none: no answer).",
                samples: requests.sorted { $0.key < $1.key }.map { key, count in
                    Family.Sample(
                        labels: [Family.Label(name: "endpoint", value: key.endpoint), Family.Label(name: "status", value: key.status)], value: "\(count)")
                }),
            durations.family,
            .counter("streamup_retries_total", "Failed requests that were retried.", gauges.retries),
            .counter("streamup_dead_letters_total", "Segments set aside in the dead-letter directory.", gauges.deadLetters),
            .counter("streamup_dead_letter_bytes_total", "Bytes of the segments set aside in the dead-letter directory.", gauges.deadLetterBytes),
            .counter("streamup_records_refused_total", "Records a receiver refused while it stored the others (--to).", gauges.recordsRefused),
            .gauge(
                "streamup_buffer_held_bytes", "Bytes held until the receiver acknowledges them (memory buffer or spool).", "\(gauges.heldBytes)",
                labels: storage),
            .gauge(
                "streamup_buffer_capacity_bytes", "The most bytes the buffer or spool holds; the input waits when it is full.", "\(gauges.capacityBytes)",
                labels: storage),
            .gauge(
                "streamup_oldest_unacknowledged_seconds", "Age of the oldest byte read and not yet acknowledged (0: none held).",
                Self.seconds(gauges.oldestUnacknowledged)),
            .gauge(
                "streamup_last_success_timestamp_seconds", "Unix time of the last 2xx answer (0: none yet).",
                lastSuccess.map { String(format: "%.3f", $0) } ?? "0"),
            .gauge("streamup_requests_in_flight", "Segment requests sent (or being cut) and not yet answered.", "\(gauges.requestsInFlight)"),
            .gauge("streamup_request_window", "The most segment requests out at once now (adapts up to --max-in-flight).", "\(gauges.requestWindow)"),
            .gauge("streamup_delivery_failing_seconds", "How long delivery has been failing without a success (0: it is not).", Self.seconds(failing)),
            .gauge(
                "streamup_unhealthy_after_seconds", "How long a failure lasts before /health answers 503 (--unhealthy-after).", Self.seconds(unhealthyAfter)),
        ]
        if let dropped = gauges.recordsDropped {
            families.append(.counter("streamup_records_dropped_total", "Records left out by --drop and --keep (not sent; their lines count as read).", dropped))
        }
        if let masked = gauges.recordsMasked {
            families.append(
                .counter("streamup_records_masked_total", "Records sent with their message as *** because their filters did not finish in time.", masked))
        }
        if let files = gauges.filesFollowed {
            families.append(.gauge("streamup_files_followed", "Files followed now (tail).", "\(files)"))
        }
        return families
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f", duration.seconds)
    }
}
