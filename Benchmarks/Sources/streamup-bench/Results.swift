/// Everything measured in one bench run, per round, before summarising.
///
/// Thread safety: a value type filled in by the main thread.
struct Results: Sendable {
    /// Per client, per measure: one value per successful run.
    struct ClientMeasures: Sendable {
        var throughputMBps: [Double] = []
        var cpuSecondsPerGB: [Double] = []
        var userSecondsPerGB: [Double] = []
        var systemSecondsPerGB: [Double] = []
        /// Peak RSS of the throughput runs.
        var rssMiB: [Double] = []
        /// Requests the sink received per throughput run.
        var requests: [Double] = []
        /// Keyed by lines per second.
        var latencyP50Ms: [Int: [Double]] = [:]
        var latencyP99Ms: [Int: [Double]] = [:]
        var latencyMaxMs: [Int: [Double]] = [:]
        var firstByteMs: [Double] = []
        var rss10GBMiB: [Double] = []
        /// Streams from a pipe (throughput and 10 GB) run, and one line per such run that did not count.
        var pipeRuns = 0
        var pipeFailures: [String] = []
        /// Latency runs, and one line per such run that did not count.
        var latencyRuns = 0
        var latencyFailures: [String] = []
        /// Steps left out, and why.
        var notes: [String] = []
    }

    /// Per log shipper, per measure: one value per successful run.
    struct ShipperMeasures: Sendable {
        var cpuSeconds: [Double] = []
        var userSeconds: [Double] = []
        var systemSeconds: [Double] = []
        var rssMiB: [Double] = []
        /// CPU per line that arrived, in µs.
        var cpuMicrosecondsPerLine: [Double] = []
        /// From the end of a line's `write(2)` to its arrival at the receiver.
        var latencyP50Ms: [Double] = []
        var latencyP99Ms: [Double] = []
        var linesDelivered: [Double] = []
        var requests: [Double] = []
        /// The writer's achieved rate and worst lag in this shipper's runs (also failed ones).
        var writerLinesPerSecond: [Double] = []
        var writerMaxLagMs: [Double] = []
        var runs = 0
        var failures: [String] = []
        var notes: [String] = []
    }

    /// Per client of the waiting runs, one value per successful run.
    struct WaitMeasures: Sendable {
        var cpuSeconds: [Double] = []
        var userSeconds: [Double] = []
        var systemSeconds: [Double] = []
        var wallSeconds: [Double] = []
        var runs = 0
        var failures: [String] = []
    }

    /// A shipper on a number of files.
    struct ShippingKey: Hashable, Sendable {
        let shipper: Shipper
        let files: Int
    }

    /// Per row of the late-answer step, one value per successful run.
    struct LateAnswerMeasures: Sendable {
        var throughputMBps: [Double] = []
        var rssMiB: [Double] = []
        var requests: [Double] = []
        var runs = 0
        var failures: [String] = []
    }

    var clients: [Client: ClientMeasures] = [:]
    var lateAnswers: [LateAnswerCase: LateAnswerMeasures] = [:]
    var shippers: [ShippingKey: ShipperMeasures] = [:]
    var waits: [WaitClient: WaitMeasures] = [:]
    /// Keyed by the number of concurrent slow streams.
    var sinkAddedKiB: [Int: [Double]] = [:]
    var sinkPerConnectionKiB: [Int: [Double]] = [:]
    var sinkBaselineKiB: [Double] = []
    var sinkCeilingMBps: [Double] = []
    var sinkFailures: [String] = []
    var elapsedSeconds: Double = 0

    /// Runs that did not count, of every workload (each is listed in the report).
    var failedRuns: Int {
        clients.values.reduce(0) { $0 + $1.pipeFailures.count + $1.latencyFailures.count } + sinkFailures.count
            + shippers.values.reduce(0) { $0 + $1.failures.count } + waits.values.reduce(0) { $0 + $1.failures.count }
            + lateAnswers.values.reduce(0) { $0 + $1.failures.count }
    }

    subscript(client: Client) -> ClientMeasures {
        get { clients[client] ?? ClientMeasures() }
        set { clients[client] = newValue }
    }

    subscript(shipper shipper: Shipper, files files: Int) -> ShipperMeasures {
        get { shippers[ShippingKey(shipper: shipper, files: files)] ?? ShipperMeasures() }
        set { shippers[ShippingKey(shipper: shipper, files: files)] = newValue }
    }

    subscript(lateAnswer row: LateAnswerCase) -> LateAnswerMeasures {
        get { lateAnswers[row] ?? LateAnswerMeasures() }
        set { lateAnswers[row] = newValue }
    }

    subscript(wait client: WaitClient) -> WaitMeasures {
        get { waits[client] ?? WaitMeasures() }
        set { waits[client] = newValue }
    }
}
