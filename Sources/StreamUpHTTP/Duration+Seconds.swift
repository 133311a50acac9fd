extension Duration {
    /// The duration in seconds (`TimeInterval`'s unit), for `Date`, `NSCondition`, Dispatch and
    /// reports. Exact to about a nanosecond for durations up to months.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, truncated toward zero; for clocks kept in atomics.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
