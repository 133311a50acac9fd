/// Median and range of one measure over the rounds.
///
/// Thread safety: an immutable value.
struct Summary: Sendable {
    let median: Double
    let min: Double
    let max: Double
    let count: Int

    /// nil when there are no values (every run of that kind failed or was skipped).
    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        median = Statistics.median(sorted: sorted)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        count = sorted.count
    }
}

/// Order statistics on plain arrays.
///
/// Thread safety: stateless.
enum Statistics {
    /// The median of an ascending array (mean of the middle two for an even count).
    static func median(sorted: [Double]) -> Double {
        precondition(!sorted.isEmpty, "median of nothing")
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Nearest-rank percentile (`p` in 0...100) of an ascending array.
    static func percentile(sorted: [UInt64], _ p: Double) -> UInt64 {
        precondition(!sorted.isEmpty, "percentile of nothing")
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
}
