extension ReplayBuffer {
    // MARK: Reading live (one request's side)

    /// Copies bytes from the acknowledged offset into `destination` and acknowledges them: the
    /// connection has them, and nothing is sent again. A `blocking` read parks (this thread:
    /// URLSession's reader, DesignNotes, platform fact 3) until a byte, the end or a failure.
    /// - Returns: the bytes copied, `.end` once the input ended and all was read, or
    ///   `.wouldBlock` (only when not `blocking`) when nothing is there yet.
    /// - Throws: the buffer's failure (a cancel, the producer's failure, the request's end).
    func readLive(into destination: UnsafeMutableRawBufferPointer, blocking: Bool) throws(StreamUpError) -> BodyRead {
        while true {
            switch withState({ $0.liveRead() }) {
            case .failed(let failure):
                throw failure
            case .end:
                return .end
            case .nothing:
                guard blocking else { return .wouldBlock }
                // Woken at once when a byte came in between.
                shell.park(for: .liveInput, now: nil)
            case .bytes(let offset, let held):
                guard !destination.isEmpty else { return .wouldBlock }
                // Across the ring's end too: each read is a libcurl callback of fixed cost, so
                // a read cut short where the ring wraps would cost a whole extra one.
                let wanted = min(destination.count, held)
                var count = 0
                while count < wanted {
                    count += try storage.read(at: offset + count, into: UnsafeMutableRawBufferPointer(rebasing: destination[count..<wanted]))
                }
                acknowledge(upTo: offset + count)
                return .bytes(count)
            }
        }
    }

    // MARK: Waiting (the delivery task's side)

    /// Suspends until a segment cut at `offset` would find something new: a whole record past
    /// it, the end of the input, or a failure; or until `deadline` passes, or the task is
    /// cancelled. Only the task waits: no thread blocks. Any number of tasks may wait, each
    /// from its own offset (segments in flight at once).
    func waitUntilReadable(from offset: Int, until deadline: UploadClock.Instant? = nil) async {
        await waitUntilReadable(from: offset, segmentStart: offset, until: deadline)
    }

    /// ``waitUntilReadable(from:until:)`` for a segment that began at `start`: a full buffer
    /// wakes it too when the segment holds a record (it then ends, so that its acknowledgement
    /// frees room).
    private func waitUntilReadable(from offset: Int, segmentStart start: Int, until deadline: UploadClock.Instant?) async {
        await shell.wait(for: .readable(from: offset, start: start, deadline: deadline), now: deadline == nil ? nil : clock.now)
    }

    /// Suspends until everything below `offset` is acknowledged, the buffer failed, or the task
    /// is cancelled.
    func waitUntilAcknowledged(_ offset: Int) async {
        await shell.wait(for: .acknowledged(upTo: offset), now: nil)
    }

    // MARK: Cutting segments

    /// Cuts the segment from `offset` (the acknowledged offset, or the end of a segment still
    /// in flight) that `limits` allow: whole records, up to the size limit, the time limit
    /// (from its first byte), the record limit, a full buffer, or the input's end
    /// (``SegmentPlan``). While the plan waits for records the task suspends
    /// (``waitUntilReadable(from:until:)``); the producer keeps writing meanwhile.
    /// - Returns: the stream range the segment holds (empty only when the input ended).
    /// - Throws: the buffer's failure (a cancel fails it), or `CancellationError`.
    func cutSegment(from offset: Int, limits: SegmentLimits) async throws -> Range<Int> {
        var plan = SegmentPlan<UploadClock.Instant>(start: offset, limits: limits)
        var position = offset
        while true {
            try Task.checkCancellation()
            if let failure { throw failure }
            switch decide(&plan, at: position, seesFullBuffer: true) {
            case .send(let end):
                position = end
            case .end:
                return offset..<position
            case .wait(let deadline):
                await waitUntilReadable(from: plan.wakeOffset(at: position), segmentStart: offset, until: deadline)
            }
        }
    }

    /// The records a segment from `offset` with `limits` would carry now, without waiting (for
    /// setting aside a segment whose last attempt carried nothing).
    func segmentRange(from offset: Int, limits: SegmentLimits) -> Range<Int> {
        var plan = SegmentPlan<UploadClock.Instant>(start: offset, limits: limits)
        var position = offset
        while case .send(let end) = decide(&plan, at: position, seesFullBuffer: false) {
            position = end
        }
        return offset..<position
    }

    /// One step of `plan` for a cut at `position`. The cursors are read under the lock; the
    /// plan reads the storage for record ends outside it, over held bytes from the cut's start
    /// to the boundary, which the writer does not touch (the cut starts at or above the
    /// acknowledged offset, and only its own caller acknowledges what it cut). A cut that
    /// `seesFullBuffer` ends at a boundary when the buffer is full, so that the
    /// acknowledgement frees room.
    private func decide(_ plan: inout SegmentPlan<UploadClock.Instant>, at position: Int, seesFullBuffer: Bool)
        -> SegmentPlan<UploadClock.Instant>.Decision
    {
        let now = clock.now
        let (available, splits) = withState { log in
            (
                SegmentPlan<UploadClock.Instant>.Available(
                    boundary: log.boundary, inputEnded: log.inputEnded, bufferFull: seesFullBuffer && log.isFull),
                log.splits
            )
        }
        let boundaries = BufferBoundaries(storage: storage, records: records, splits: splits, end: available.boundary)
        return plan.decide(at: position, available, now: now, boundaries: boundaries)
    }
}
