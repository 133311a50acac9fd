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
        /// Keyed by lines per second.
        var latencyP50Ms: [Int: [Double]] = [:]
        var latencyP99Ms: [Int: [Double]] = [:]
        var latencyMaxMs: [Int: [Double]] = [:]
        var firstByteMs: [Double] = []
        var rss1GBMiB: [Double] = []
        var rss10GBMiB: [Double] = []
        var runs = 0
        /// One line per run that did not count.
        var failures: [String] = []
        /// Steps left out, and why.
        var notes: [String] = []
    }

    var clients: [Client: ClientMeasures] = [.streamup: ClientMeasures(), .curl: ClientMeasures()]
    /// Keyed by the number of concurrent slow streams.
    var sinkAddedKiB: [Int: [Double]] = [:]
    var sinkPerConnectionKiB: [Int: [Double]] = [:]
    var sinkBaselineKiB: [Double] = []
    var sinkCeilingMBps: [Double] = []
    var sinkFailures: [String] = []
    var elapsedSeconds: Double = 0

    subscript(client: Client) -> ClientMeasures {
        get { clients[client] ?? ClientMeasures() }
        set { clients[client] = newValue }
    }
}
