/// Counts the ``LogWriter`` lines that reach the ``LineCountingSink`` in one run: each number
/// seen after `seq=` is marked, so the count is of distinct lines (a line that arrives twice
/// counts once, and as a duplicate). Only the numbers are read, so a shipper that reframes the
/// lines (syslog-ng joins a batch with `\n` and no final one) is counted the same way.
///
/// Thread safety: the counts are guarded by the `LockedValue`'s mutex; the sink's connection
/// threads report into it concurrently.
final class LineTally: Sendable {
    /// What arrived so far.
    struct Counts: Sendable {
        /// Distinct line numbers seen.
        var distinct = 0
        /// Line numbers seen again.
        var duplicates = 0
        /// Requests that ended properly (and were answered 200).
        var requests = 0
        /// Requests whose connection closed before their end.
        var abortedRequests = 0
        /// Body bytes received.
        var bytes = 0
    }

    private struct State {
        var seen: [UInt64]
        /// Per line number: ``MonotonicClock`` time of its first arrival (0 until then).
        var arrivals: [UInt64]
        var counts = Counts()
    }

    let expected: Int
    private let state: LockedValue<State>

    init(expected: Int) {
        self.expected = expected
        state = LockedValue(
            State(seen: [UInt64](repeating: 0, count: expected / 64 + 1), arrivals: [UInt64](repeating: 0, count: expected)))
    }

    var counts: Counts { state.update { $0.counts } }

    /// Per line that arrived: arrival minus `writtenAt[number]`, in ns, ascending.
    func latencies(writtenAt: [UInt64]) -> [UInt64] {
        let arrivals = state.update { $0.arrivals }
        return zip(arrivals, writtenAt).compactMap { arrival, written in arrival == 0 ? nil : arrival - min(arrival, written) }.sorted()
    }

    /// Marks `numbers` (numbers outside the run are ignored), which arrived at `now`, and counts `bytes` of body.
    func mark(_ numbers: [Int], bytes: Int, at now: UInt64) {
        let expected = expected
        state.update { state in
            state.counts.bytes += bytes
            for number in numbers where number >= 0 && number < expected {
                let (word, bit) = (number / 64, UInt64(1) << UInt64(number % 64))
                if state.seen[word] & bit == 0 {
                    state.seen[word] |= bit
                    state.arrivals[number] = now
                    state.counts.distinct += 1
                } else {
                    state.counts.duplicates += 1
                }
            }
        }
    }

    /// The line numbers below `count` that have not arrived (at most `limit` of them).
    func missing(below count: Int, limit: Int = 100_000) -> [Int] {
        let seen = state.update { $0.seen }
        var numbers: [Int] = []
        for number in 0..<min(count, expected) where seen[number / 64] & (UInt64(1) << UInt64(number % 64)) == 0 {
            numbers.append(number)
            if numbers.count == limit { break }
        }
        return numbers
    }

    func requestEnded() {
        state.update { $0.counts.requests += 1 }
    }

    func requestAborted() {
        state.update { $0.counts.abortedRequests += 1 }
    }
}

/// Finds `seq=` followed by digits in a body that arrives in pieces (a number may be split
/// between two of them).
///
/// Thread safety: a value type confined to its connection's thread.
struct SequenceScanner {
    private var matched = 0
    private var value: Int?

    mutating func feed(_ bytes: UnsafeRawBufferPointer, into numbers: inout [Int]) {
        let prefix = LogWriter.prefix
        for byte in bytes {
            if matched == prefix.count {
                if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    value = (value ?? 0) &* 10 &+ Int(byte - UInt8(ascii: "0"))
                    continue
                }
                if let number = value { numbers.append(number) }
                matched = 0
                value = nil
            }
            matched = byte == prefix[matched] ? matched + 1 : (byte == prefix[0] ? 1 : 0)
        }
    }

    /// At the end of a body: a number that ran up to its last byte.
    mutating func finish(into numbers: inout [Int]) {
        if matched == LogWriter.prefix.count, let number = value { numbers.append(number) }
        matched = 0
        value = nil
    }
}
