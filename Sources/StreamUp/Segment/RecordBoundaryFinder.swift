/// Where records end in the bytes a buffer holds, for ``SegmentPlan``.
///
/// Thread safety: called by the plan's owner (one cutting task), outside the buffer's lock.
protocol RecordBoundaryFinder {
    /// The last boundary `b` with `offset < b <= limit`, if there is one among the bytes written.
    func lastBoundary(after offset: Int, atOrBefore limit: Int) -> Int?
    /// The first boundary after `offset`; called only when one has been written.
    func firstBoundary(after offset: Int) -> Int
    /// The boundary that ends the `records`-th record after `offset`, or, when fewer records
    /// end by `limit` (a boundary), `limit`; with how many records that is.
    func boundary(after offset: Int, records: Int, atOrBefore limit: Int) -> (boundary: Int, records: Int)
}
