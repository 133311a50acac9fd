import Foundation
import StreamUp
import StreamUpTestSupport
import Testing

@testable import streamup

/// `--metrics`: `/metrics` read by an independent parser (Python's `prometheus_client`, from
/// PyPI; `.ci/run` installs it) says what a receiver validator got, and `/health` turns 503
/// while the receiver is down longer than `--unhealthy-after`, and 200 once it is back.
@Suite(.timeLimit(.minutes(2))) struct MetricsCommandTests {
    /// What `prometheus_client`'s text parser makes of a scrape: each sample by name and labels,
    /// each family's type, and the response's content type.
    struct Scrape {
        var contentType: String
        var samples: [String: Double]
        var types: [String: String]

        subscript(_ name: String) -> Double? { samples[name] }
    }

    /// Parses `text`, or fetches `url` and parses its body, with `prometheus_client`.
    static func parse(url: String? = nil, text: String? = nil) async throws -> Scrape {
        let program = #"""
            import json, sys, urllib.request
            from prometheus_client.parser import text_string_to_metric_families
            source = sys.argv[1]
            if source.startswith("http"):
                with urllib.request.urlopen(source) as answer:
                    content_type, text = answer.headers.get("Content-Type"), answer.read().decode("utf-8")
            else:
                content_type, text = "", source
            samples, types = {}, {}
            for family in text_string_to_metric_families(text):
                types[family.name] = family.type
                for s in family.samples:
                    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
                    samples[s.name + ("{%s}" % labels if labels else "")] = s.value
            json.dump({"content_type": content_type, "samples": samples, "types": types}, sys.stdout)
            """#
        let (status, data, problem) = try await PythonScript.run(program, [url ?? text ?? ""])
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        guard status == 0, let object else {
            throw ValidatorError(
                message: "prometheus_client could not parse the scrape (pip install prometheus_client): \(String(decoding: problem, as: UTF8.self))")
        }
        return Scrape(
            contentType: object["content_type"] as? String ?? "", samples: object["samples"] as? [String: Double] ?? [:],
            types: object["types"] as? [String: String] ?? [:])
    }

    /// The metrics URL a child with `--metrics 0` says on stderr.
    static func metricsURL(of child: StreamupProcess) async -> URL? {
        await poll {
            child.stderr.split(separator: "\n").lazy.compactMap { line -> URL? in
                guard let range = line.range(of: "serving metrics on ") else { return nil }
                return URL(string: String(line[range.upperBound...].split(separator: " ").first ?? ""))
            }.first
        }
    }

    /// One sample's value in a scrape read cheaply (for polling; the checks use the parser).
    /// Blocking: from ``scraped(_:)`` or a thread of its own.
    static func sample(_ name: String, port: UInt16) -> Double? {
        guard let (status, body) = LoopbackGet.fetch(port: port, "/metrics"), status == 200 else { return nil }
        return String(decoding: body, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// `/health`'s status (blocking).
    static func health(port: UInt16) -> Int? {
        LoopbackGet.fetch(port: port, "/health")?.status
    }

    /// Waits, on a thread of its own, until `condition` (which scrapes) holds.
    static func scraped(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
        await onOwnThread { eventually(condition) }
    }

    /// 500 lines to a Vector validator, the input left open: once they are acknowledged, the
    /// scrape's lines, bytes and 2xx requests are what the validator stored, and nothing is held.
    @Test(.needsParser) func metricsCountWhatTheReceiverGot() async throws {
        let started = Date().timeIntervalSince1970
        try await ReceiverValidator.with("vector") { validator in
            let child = try StreamupProcess(["--metrics", "0", "--segment-seconds", "100ms", "--segment-bytes", "4k", validator.url.absoluteString])
            let url = try #require(await Self.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(url.port ?? 0)
            #expect(url.host == "127.0.0.1", "loopback by default: \(url)")
            let lines = (0..<500).map { "line \($0) " + String(repeating: "x", count: $0 % 37) }
            let input = lines.map { $0 + "\n" }.joined()
            child.write(input)
            #expect(await Self.scraped { Self.sample("streamup_bytes_delivered_total", port: port) == Double(input.utf8.count) })

            let scrape = try await Self.parse(url: url.absoluteString)
            let stored = try await validator.snapshot()
            #expect(scrape.contentType == "text/plain; version=0.0.4; charset=utf-8")
            #expect(stored.text == lines)
            #expect(scrape["streamup_lines_read_total"] == Double(stored.lines.count))
            #expect(scrape["streamup_bytes_read_total"] == Double(stored.lines.reduce(0) { $0 + $1.count + 1 }))
            #expect(scrape["streamup_bytes_delivered_total"] == Double(stored.lines.reduce(0) { $0 + $1.count + 1 }))
            let endpoint = "\(validator.url.host ?? ""):\(validator.url.port ?? 0)"
            #expect(scrape["streamup_requests_total{endpoint=\"\(endpoint)\",status=\"2xx\"}"] == Double(stored.requests), "\(scrape.samples)")
            #expect(stored.requests > 1, "the lines went in one request: \(stored.requests)")
            #expect(scrape["streamup_buffer_held_bytes{storage=\"memory\"}"] == 0)
            #expect(scrape["streamup_buffer_capacity_bytes{storage=\"memory\"}"] == Double(8 << 20))
            #expect(scrape["streamup_oldest_unacknowledged_seconds"] == 0)
            #expect(scrape["streamup_retries_total"] == 0 && scrape["streamup_bytes_resent_total"] == 0)
            #expect((scrape["streamup_last_success_timestamp_seconds"] ?? 0) >= started.rounded(.down))
            #expect(scrape.types["streamup_lines_read"] == "counter" && scrape.types["streamup_buffer_held_bytes"] == "gauge")
            #expect(await onOwnThread { Self.health(port: port) } == 200)
            #expect(await onOwnThread { LoopbackGet.fetch(port: port, "/nothing")?.status } == 404)
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
    }

    /// The receiver goes down: after `--unhealthy-after` of failing, `/health` answers 503 and
    /// the scrape shows the unanswered requests and the held bytes' age; once a receiver is
    /// back on the port, 200 again and every line arrived.
    @Test(.needsParser) func healthFailsWhileTheReceiverIsDownAndRecovers() async throws {
        let first = try PythonScript.start("receiver.py", ["vector", "--port", "0"])
        let line = try #require(await first.firstLine(), "stderr: \(first.stderr)")
        let receiverURL = try #require(URL(string: String(line.dropFirst("listening on ".count))))
        let receiverPort = try #require(receiverURL.port)
        let child = try StreamupProcess([
            "--metrics", "0", "--unhealthy-after", "1s", "--retries", "forever", "--segment-seconds", "100ms", receiverURL.absoluteString,
        ])
        let url = try #require(await Self.metricsURL(of: child), "stderr: \(child.stderr)")
        let port = UInt16(url.port ?? 0)
        child.write("before\n")
        #expect(await Self.scraped { Self.sample("streamup_bytes_delivered_total", port: port) == 7 })
        #expect(await onOwnThread { Self.health(port: port) } == 200)

        first.signal(SIGTERM)
        _ = await first.waitForExit()
        child.write("while down\n")
        #expect(await Self.scraped { Self.health(port: port) == 503 }, "stderr: \(child.stderr)")
        let down = try await Self.parse(url: url.absoluteString)
        #expect((down["streamup_delivery_failing_seconds"] ?? 0) >= 1)
        #expect((down["streamup_oldest_unacknowledged_seconds"] ?? 0) >= 1)
        #expect(down["streamup_buffer_held_bytes{storage=\"memory\"}"] == 11)
        #expect((down["streamup_requests_total{endpoint=\"127.0.0.1:\(receiverPort)\",status=\"none\"}"] ?? 0) >= 1, "\(down.samples)")

        let second = try PythonScript.start("receiver.py", ["vector", "--port", "\(receiverPort)"])
        _ = await second.firstLine()
        #expect(await Self.scraped { Self.health(port: port) == 200 }, "stderr: \(child.stderr)")
        #expect(await Self.scraped { Self.sample("streamup_bytes_delivered_total", port: port) == 18 })
        let back = try await Self.parse(url: url.absoluteString)
        #expect(back["streamup_delivery_failing_seconds"] == 0 && back["streamup_buffer_held_bytes{storage=\"memory\"}"] == 0)
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        second.signal(SIGTERM)
        _ = await second.waitForExit()
    }

    /// `tail --metrics` counts the files it follows.
    @Test(.needsParser) func tailCountsTheFilesItFollows() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-tail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["a.log", "b.log", "c.log"] {
            try Data("\(name)\n".utf8).write(to: directory.appendingPathComponent(name))
        }
        try await withSink { sink, _ in
            let child = try StreamupProcess(["tail", "--from-start", "--metrics", "0", directory.path + "/*.log", sink.url.absoluteString])
            let url = try #require(await Self.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(url.port ?? 0)
            #expect(await Self.scraped { Self.sample("streamup_lines_read_total", port: port) == 3 })
            let scrape = try await Self.parse(url: url.absoluteString)
            #expect(scrape["streamup_files_followed"] == 3)
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
    }

    /// `heartbeat --metrics`, alone and around a job: the beats read are the lines the sink got.
    @Test(.needsParser, arguments: [false, true]) func heartbeatCountsItsBeats(job: Bool) async throws {
        try await withSink { sink, directory in
            let command = job ? ["--", "sh", "-c", "cat > /dev/null"] : []
            let child = try StreamupProcess(["heartbeat", "--every", "300ms", "--metrics", "0", sink.url.absoluteString] + command)
            let url = try #require(await Self.metricsURL(of: child), "stderr: \(child.stderr)")
            let port = UInt16(url.port ?? 0)
            // Beats keep coming: wait for a moment between two, when all read is acknowledged.
            #expect(
                await Self.scraped {
                    guard let lines = Self.sample("streamup_lines_read_total", port: port), lines >= 3,
                        let read = Self.sample("streamup_bytes_read_total", port: port),
                        Self.sample("streamup_bytes_delivered_total", port: port) == read,
                        Self.sample("streamup_lines_read_total", port: port) == lines
                    else { return false }
                    let stored = streamText(in: directory) ?? ""
                    return Double(stored.utf8.count) == read && Double(stored.split(separator: "\n").count) == lines
                }, "stderr: \(child.stderr)")
            let scrape = try await Self.parse(url: url.absoluteString)
            #expect(
                scrape.types["streamup_lines_read"] == "counter"
                    && (scrape["streamup_requests_total{endpoint=\"\(sink.url.host ?? ""):\(sink.port)\",status=\"2xx\"}"] ?? 0) >= 1, "\(scrape.samples)")
            if job { child.closeStdin() } else { child.signal(SIGTERM) }
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        }
    }

    /// The text itself, through the independent parser: every family typed, counters end in
    /// `_total`, label values escaped, requests by endpoint and status class (none: no answer).
    @Test(.needsParser) func theExpositionParses() async throws {
        let metrics = Metrics(unhealthyAfter: .seconds(60))
        metrics.attach { Metrics.Gauges(linesRead: 3, bytesRead: 30, bytesDelivered: 20, heldBytes: 10, capacityBytes: 100, recordsDropped: 2) }
        let url = try #require(URL(string: "http://logs.example/ingest"))
        metrics.record(.requestStarted(method: "POST", url: url, headers: []))
        metrics.record(.responseReceived(statusCode: 104, headers: [:]))
        metrics.record(.responseReceived(statusCode: 200, headers: [:]))
        metrics.record(.requestStarted(method: "POST", url: url, headers: []))
        metrics.record(.retrying(reason: "connection refused", attempt: 1, delay: .seconds(1), first: true))
        metrics.record(.requestStarted(method: "POST", url: try #require(URL(string: "https://[::1]/x")), headers: []))
        metrics.record(.responseReceived(statusCode: 503, headers: [:]))
        let scrape = try await Self.parse(text: metrics.exposition())
        #expect(scrape["streamup_requests_total{endpoint=\"logs.example:80\",status=\"2xx\"}"] == 1)
        #expect(scrape["streamup_requests_total{endpoint=\"logs.example:80\",status=\"none\"}"] == 1)
        #expect(scrape["streamup_requests_total{endpoint=\"[::1]:443\",status=\"5xx\"}"] == 1)
        // Lines left out by --drop and --keep count as read, as the help says.
        #expect(scrape["streamup_lines_read_total"] == 5 && scrape["streamup_bytes_delivered_total"] == 20)
        #expect(scrape["streamup_records_dropped_total"] == 2)
        #expect(scrape["streamup_files_followed"] == nil, "only tail follows files")
        // Two requests answered: the histogram has them both, the unanswered one not.
        #expect(scrape["streamup_request_duration_seconds_count"] == 2 && scrape["streamup_request_duration_seconds_bucket{le=\"+Inf\"}"] == 2)
        #expect(scrape.types["streamup_request_duration_seconds"] == "histogram")
        #expect(MetricFamily.escaped("a\"b\\c\nd") == #"a\"b\\c\nd"#)
    }

    /// `streamup run`'s scrape, through the independent parser: two pipelines' families merged
    /// by name with the `pipeline` label first (each family's HELP and TYPE once), the build
    /// and the standard process metrics typed as Prometheus clients type them.
    @Test(.needsParser) func pipelinesFamiliesMergeByNameWithTheirLabel() async throws {
        let (a, b) = (Metrics(unhealthyAfter: .seconds(60)), Metrics(unhealthyAfter: .seconds(60)))
        a.attach { Metrics.Gauges(linesRead: 3, bytesRead: 30, bytesDelivered: 30) }
        b.attach { Metrics.Gauges(linesRead: 5, bytesRead: 50, bytesDelivered: 20) }
        let merged = MetricFamily.merged([
            a.families().map { $0.labelled(MetricFamily.Label(name: "pipeline", value: "a")) },
            b.families().map { $0.labelled(MetricFamily.Label(name: "pipeline", value: "tail /var/log/\"b\".log")) },
        ])
        let text = MetricFamily.render(ProcessMetrics.families() + merged)
        let scrape = try await Self.parse(text: text)
        #expect(scrape["streamup_lines_read_total{pipeline=\"a\"}"] == 3)
        #expect(scrape["streamup_lines_read_total{pipeline=\"tail /var/log/\"b\".log\"}"] == 5, "\(scrape.samples.keys.sorted())")
        #expect(scrape["streamup_records_delivered_total{pipeline=\"a\"}"] == 3)
        #expect(text.components(separatedBy: "# TYPE streamup_lines_read_total counter").count == 2)
        #expect(scrape.types["process_cpu_seconds"] == "counter" && scrape.types["process_resident_memory_bytes"] == "gauge")
        #expect((scrape["process_open_fds"] ?? 0) > 0 && (scrape["process_max_fds"] ?? 0) >= (scrape["process_open_fds"] ?? 0))
        #expect(scrape["streamup_build_info{version=\"\(StreamUpVersion.current)\"}"] == 1)
    }

    /// `/health` on the manual passage of time: healthy while idle, still while failing less
    /// than the threshold, 503 past it, healthy again after a success; other methods 405.
    @Test func healthFollowsTheFailingSpell() {
        let metrics = Metrics(unhealthyAfter: .seconds(60))
        let start = ContinuousClock.now
        #expect(metrics.health(now: start).healthy)
        metrics.record(.retrying(reason: "503 Service Unavailable", attempt: 1, delay: .seconds(1), first: true), now: start)
        metrics.record(.retrying(reason: "503 Service Unavailable", attempt: 2, delay: .seconds(2), first: false), now: start + .seconds(30))
        #expect(metrics.health(now: start + .seconds(59)).healthy)
        let failing = metrics.health(now: start + .seconds(61))
        #expect(!failing.healthy && failing.text.contains("503 Service Unavailable"), "\(failing.text)")
        metrics.record(.responseReceived(statusCode: 200, headers: [:]), now: start + .seconds(62))
        #expect(metrics.health(now: start + .seconds(200)).healthy)
        #expect(metrics.answer("POST", "/metrics").status == 405 && metrics.answer("GET", "/health?x=1").status == 200)
    }

    /// `--metrics 9400` is loopback; an address is taken as given.
    @Test func addressesParse() throws {
        #expect(try MetricsOptions.parseAddress("9400") == ("127.0.0.1", 9400))
        #expect(try MetricsOptions.parseAddress("0.0.0.0:9400") == ("0.0.0.0", 9400))
        #expect(try MetricsOptions.parseAddress("[::1]:9400") == ("::1", 9400))
        #expect(throws: UsageError.self) { try MetricsOptions.parseAddress(":9400") }
        #expect(throws: UsageError.self) { try MetricsOptions.parseAddress("host:99999") }
    }
}

extension MetricsCommandTests {
    /// `--endpoints balance` over two receivers and a URL nothing listens at: the requests each
    /// receiver got are its `2xx` series (an answer is counted for the URL of the request it
    /// answers, not another in flight), and the dead URL's are `none`, never `2xx`.
    @Test(.needsParser) func balanceCountsEachEndpointsOwnRequests() async throws {
        try await ReceiverValidator.with("vector") { first in
            try await ReceiverValidator.with("vector") { second in
                let dead = "http://127.0.0.1:\(unusedLocalPort())"
                let child = try StreamupProcess([
                    "--metrics", "0", "--endpoints", "balance", "--segment-seconds", "100ms", "--segment-bytes", "2k", dead, first.url.absoluteString,
                    second.url.absoluteString,
                ])
                let url = try #require(await Self.metricsURL(of: child), "stderr: \(child.stderr)")
                let port = UInt16(url.port ?? 0)
                let lines = (0..<300).map { "line \($0) " + String(repeating: "x", count: $0 % 37) }
                let input = lines.map { $0 + "\n" }.joined()
                child.write(input)
                #expect(await Self.scraped { Self.sample("streamup_bytes_delivered_total", port: port) == Double(input.utf8.count) })
                let scrape = try await Self.parse(url: url.absoluteString)
                let stored = [try await first.snapshot(), try await second.snapshot()]
                #expect(Set(stored.flatMap(\.text)) == Set(lines))
                for (validator, snapshot) in zip([first, second], stored) {
                    let endpoint = "127.0.0.1:\(validator.url.port ?? 0)"
                    #expect(snapshot.requests > 0, "balance sent \(endpoint) nothing")
                    #expect(scrape["streamup_requests_total{endpoint=\"\(endpoint)\",status=\"2xx\"}"] == Double(snapshot.requests), "\(scrape.samples)")
                }
                let deadEndpoint = "127.0.0.1:\(URL(string: dead)?.port ?? 0)"
                #expect((scrape["streamup_requests_total{endpoint=\"\(deadEndpoint)\",status=\"none\"}"] ?? 0) >= 1, "\(scrape.samples)")
                #expect(scrape["streamup_requests_total{endpoint=\"\(deadEndpoint)\",status=\"2xx\"}"] == nil, "\(scrape.samples)")
                child.closeStdin()
                #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            }
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// The test reads scrapes with `prometheus_client`: skipped where it is missing, except under CI.
    fileprivate static var needsParser: Self {
        .enabled(if: OptionalTool.prometheusClient.isAvailable, Comment(rawValue: OptionalTool.prometheusClient.skipReason))
    }
}
