/// The records (lines) of an upload the receiver acknowledged, from what the uploader counts:
/// lines and bytes read, bytes acknowledged. Where the input stood is noted at each request's
/// start (``note(bytesRead:linesRead:)``); the records acknowledged are then the lines read by
/// the last noted point the acknowledged bytes have reached, and all lines read once every byte
/// read is acknowledged. So the count is exact whenever nothing is held, never more than the
/// truth, and behind by at most the requests out; it never goes down.
///
/// Thread safety: a value type, kept in ``Metrics``' state under its lock.
struct DeliveredRecords {
    /// Points noted at most (past it every other one is dropped: the count only lags more).
    static let limit = 256

    private var points: [(bytes: Int, lines: Int)] = []
    private var known = 0

    /// The input had `bytesRead` bytes holding `linesRead` lines.
    mutating func note(bytesRead: Int, linesRead: Int) {
        if let last = points.last, last.bytes >= bytesRead { return }
        if points.count >= Self.limit { points = points.enumerated().filter { $0.offset % 2 == 1 }.map(\.element) }
        points.append((bytesRead, linesRead))
    }

    /// The records acknowledged once `bytesDelivered` of the `bytesRead` bytes read (holding
    /// `linesRead` lines) are.
    mutating func count(bytesDelivered: Int, bytesRead: Int, linesRead: Int) -> Int {
        if bytesDelivered >= bytesRead {
            known = max(known, linesRead)
            points.removeAll()
        } else if let reached = points.lastIndex(where: { $0.bytes <= bytesDelivered }) {
            known = max(known, points[reached].lines)
            points.removeFirst(reached + 1)
        }
        return known
    }
}
