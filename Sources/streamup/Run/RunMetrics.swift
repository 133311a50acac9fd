import Foundation
import StreamUp
import StreamUpSink

/// `streamup run --metrics`: `/metrics` holds every pipeline of the file, each with its phase
/// (`streamup_pipeline_up`, `streamup_pipeline_state`) whether it runs or has ended, the series
/// of each running pipeline's upload with its `pipeline` label, the build and the process;
/// `/health` answers 503 naming every pipeline that ended in failure (a 404, a failure at
/// start) and every one whose delivery has failed for `--unhealthy-after`.
///
/// Thread safety: reads the supervisor's snapshot (taken under its lock) and each pipeline's
/// ``Metrics`` (their own locks); callable from any thread.
struct RunMetrics: Sendable {
    let supervisor: RunSupervisor
    let unhealthyAfter: Duration

    /// The phases `streamup_pipeline_state` names, one series each per pipeline.
    static let states = ["waiting", "starting", "running", "stopping", "ended", "failed"]

    /// The answer to `method target` (the metrics server's ``SinkResponder``).
    func answer(_ method: String, _ target: String) -> SinkAnswer {
        guard method == "GET" || method == "HEAD" else {
            return SinkAnswer(status: 405, body: "GET or HEAD only\n", headers: [SinkHeaderField(name: "Allow", value: "GET, HEAD")])
        }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? target
        switch path {
        case "/metrics":
            return SinkAnswer(status: 200, contentType: Metrics.contentType, body: MetricFamily.render(families()))
        case "/health":
            let (healthy, text) = health()
            return SinkAnswer(status: healthy ? 200 : 503, body: text)
        default:
            return SinkAnswer(status: 404, body: "not found: /metrics and /health are served here\n")
        }
    }

    /// Every family of the scrape.
    func families() -> [MetricFamily] {
        let (slots, handles, _) = supervisor.snapshot()
        var up = MetricFamily(
            name: "streamup_pipeline_up", kind: .gauge, help: "1 while the pipeline's upload runs, 0 while it waits, starts, stops or has ended.", samples: [])
        var phase = MetricFamily(
            name: "streamup_pipeline_state", kind: .gauge,
            help: "1 for the pipeline's phase: waiting (for its earlier copy), starting, running, stopping, ended (by itself, or stopped) or failed.",
            samples: [])
        var uploads: [[MetricFamily]] = []
        for slot in slots {
            let name = MetricFamily.Label(name: "pipeline", value: slot.pipeline.name)
            let state = Self.state(of: slot.phase)
            up.samples.append(MetricFamily.Sample(labels: [name], value: state == "running" ? "1" : "0"))
            for each in Self.states {
                phase.samples.append(MetricFamily.Sample(labels: [name, MetricFamily.Label(name: "state", value: each)], value: each == state ? "1" : "0"))
            }
            if let copy = slot.phase.copy, let metrics = handles[copy]?.metrics {
                uploads.append(metrics.families().map { $0.labelled(name) })
            }
        }
        return ProcessMetrics.families() + [up, phase] + MetricFamily.merged(uploads)
    }

    /// 200 while every pipeline runs or waits and delivers; 503 naming the pipelines that ended
    /// in failure and those whose delivery has failed for `unhealthyAfter`.
    func health() -> (healthy: Bool, text: String) {
        let (slots, handles, failures) = supervisor.snapshot()
        var problems = failures.map { name, end in
            switch end {
            case .failedAtStart(let status): "\(name): could not start (exit status \(status))"
            case .ended(let status): "\(name): ended (exit status \(status))"
            case .stopped(let status, _): "\(name): stopped before it delivered everything (exit status \(status))"
            }
        }
        for slot in slots {
            guard let copy = slot.phase.copy, let metrics = handles[copy]?.metrics, metrics.failingFor() >= unhealthyAfter else { continue }
            problems.append("\(slot.pipeline.name): delivery failing for \(String(format: "%.1f", metrics.failingFor().seconds))s")
        }
        guard problems.isEmpty else { return (false, problems.joined(separator: "\n") + "\n") }
        return (true, "ok\n")
    }

    /// The `state` label of a phase.
    static func state(of phase: RunSupervisor.Machine.Phase) -> String {
        switch phase {
        case .waiting: "waiting"
        case .starting: "starting"
        case .running: "running"
        case .stopping: "stopping"
        case .ended(let end): end.isFailure ? "failed" : "ended"
        }
    }
}
