/// How a writer waits when the buffer, or its storage (a full disk), has no room for the next
/// piece of its write: the one difference between the writers of
/// ``ReplayBuffer/write(_:from:mark:writer:waiting:)``.
///
/// Thread safety: a value type.
enum SpaceWait: Equatable {
    /// A task (``StreamWriter``'s async writes): the loop returns, the task suspends in
    /// ``ReplayBuffer/waitForSpace(_:)`` and calls it again with the same offset.
    case suspends
    /// A producer thread (``BlockingStreamWriter``): the thread parks until there is room.
    case parks
    /// A write that must not wait (``StreamWriter/tryWrite(_:)``): it gives up while none of its
    /// bytes are in (they are not, and it is told the buffer is full); once some are, it parks
    /// for the rest, as on a lock, so that the write is whole.
    case givesUp
}

extension ReplayBuffer {
    // MARK: Writing (the producer's side)

    /// The one write loop: copies `bytes` from `offset` into the buffer, in the turn of writer
    /// `id`, a piece at a time (one contiguous piece of free space each, so two at the ring's
    /// end), each marked as the part of `mark` (the whole write's source, or nil) it stands for.
    /// When the buffer, or its storage, has no room for the next piece, it waits `waiting`'s
    /// way. Moves `offset` past what went in.
    /// - Returns: true once all of `bytes` are in; false when a writer that `suspends` must
    ///   wait for space, or one that `givesUp` gave up with none of its bytes in.
    /// - Throws: the buffer's failure (or its end); `CancellationError` once a parked thread's
    ///   producer was cancelled.
    func write(_ bytes: UnsafeRawBufferPointer, from offset: inout Int, mark: SourceMark?, writer id: Int, waiting: SpaceWait) throws -> Bool {
        while offset < bytes.count {
            if let copied = try copyPiece(of: bytes, from: offset, mark: mark) {
                offset += copied
                continue
            }
            switch waiting {
            case .suspends:
                return false
            case .givesUp where offset == 0:
                // Only the storage can have had no room: the turn came with the space.
                giveBackHeld()
                return false
            case .parks, .givesUp:
                try waitForSpaceBlocking(id)
            }
        }
        return true
    }

    /// Copies the next piece of a write into the free space: the bytes of `bytes` from `offset`
    /// on, as many as one contiguous piece takes, marked as the part of `mark` they stand for.
    /// Returns how many went in; nil when none did: the buffer is full, or the storage had no
    /// room for them (a full disk: they are held, and the call after the writer's wait commits
    /// them).
    private func copyPiece(of bytes: UnsafeRawBufferPointer, from offset: Int, mark: SourceMark?) throws -> Int? {
        let piece = mark.map { StreamWriter.mark($0, forBytes: offset, of: bytes.count) }
        return try withWritableSpace(maxLength: bytes.count - offset, mark: piece) { space in
            space.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + space.count]))
            return space.count
        }
    }

    /// Offers free space (one contiguous piece of at most `maxLength` bytes) to `fill`, which
    /// returns how many bytes it put there; those bytes came from `mark` (nil: no source to
    /// remember). Returns what `fill` returned, or nil without calling it when there is no space.
    /// Only the writer whose turn it is calls it; it never waits, apart from what `fill` does.
    ///
    /// When the storage has no room for the bytes (a full disk, ``ReplayStorage/retryTime(after:)``)
    /// they are held, in the storage's writable space, and nil is returned: the writer waits
    /// (``waitForSpace(_:)``, which waits for room on the storage then) and calls again, which
    /// commits the held bytes first and returns their count, without calling `fill`. A writer
    /// that leaves its turn with bytes held drops them (``onHeldDropped`` hears).
    ///
    /// The hot path takes the lock three times: the reservation (or the held bytes), the start
    /// of the commit (a stop may have come while `fill` read), and the count.
    /// - Throws: the buffer's failure (or its end) instead of calling `fill`; what `fill` threw.
    func withWritableSpace(maxLength: Int, mark: SourceMark?, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int? {
        let started = ContinuousClock.now
        let offset: Int
        let free: Int
        let boundary: Int
        switch shell.locked({ $0.reserve(now: started) }) {
        case .space(let at, let count, let last):
            (offset, free, boundary) = (at, count, last)
        case .held(let bytes):
            return try commit(bytes)
        case .closed(let error, let actions):
            shell.perform(actions)
            throw error
        }
        if free == 0 { return nil }
        let space = storage.writableSpace(at: offset, maxLength: min(maxLength, free))
        let count = try fill(space)
        precondition(count >= 0 && count <= space.count, "filled \(count) of \(space.count) bytes")
        guard count > 0 else { return 0 }
        // A read that returned after a stop dropped the unfinished record: its bytes would
        // continue a record no longer there.
        guard shell.locked({ $0.beginCommit() }) else {
            onDroppedAtStop?(count)
            throw Self.ended
        }
        // The record ends are found in the bytes just filled, before they are published.
        let filled = UnsafeRawBufferPointer(rebasing: space[..<count])
        let found =
            records == .lines
            ? Self.boundaries(in: filled, at: offset, after: boundary, maxRecord: maxRecord)
            : (boundary: offset + count, splits: [])
        let lines = records == .lines ? Self.newlineCount(in: filled) : 0
        return try commit(
            Log.Filled(space: space, count: count, offset: offset, mark: mark, boundary: found.boundary, splits: found.splits, lines: lines, time: .now))
    }

    /// Commits `bytes` to the storage and counts them (returns their count); holds them and
    /// returns nil when the storage has no room now; fails the buffer on any other error.
    private func commit(_ bytes: Log.Filled) throws(StreamUpError) -> Int? {
        do throws(StreamUpError) {
            try storage.commit(bytes.space, count: bytes.count, at: bytes.offset, mark: bytes.mark)
        } catch {
            if let retryAt = storage.retryTime(after: error) {
                shell.locked { $0.holdForRoom(bytes, retryAt: retryAt) }
                return nil
            }
            shell.act { $0.commitFailed(error) }
            throw error
        }
        shell.act { $0.committed(bytes) }
        return bytes.count
    }

    /// Takes back the held bytes without a word (their writer must not wait and still has them:
    /// it is told that the storage is full) and ends their write.
    func giveBackHeld() {
        shell.act { $0.giveBack() }
    }

    /// Notes that the source bytes `mark` describes were read and left out.
    func skip(_ mark: SourceMark) {
        guard tracksSources else { return }
        shell.locked { $0.skip(mark) }
    }

    // MARK: Writers' turns

    /// A new writer's name in the line.
    func newWriterID() -> Int {
        shell.locked { $0.newWriterID() }
    }

    /// A new writer takes the turn once `needs` bytes are free, waiting in line behind the
    /// writers that came first; one that must wait for room waits for `refill` bytes (default
    /// `needs`), so that one wake-up refills a good part of the buffer. `quick`: it gives the
    /// turn back without waiting for anything. Returns the writer's name, for its writes and
    /// ``leaveTurn(_:)``.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when the task is
    ///   cancelled while in line (it then holds no turn).
    func takeTurn(needs: Int, refill: Int? = nil, quick: Bool) async throws -> Int {
        let now = ContinuousClock.now
        // One lock for the name and the arrival.
        let (id, outcome, failure) = shell.locked { log in
            let id = log.newWriterID()
            return (id, log.arrive(id, needs: needs, patience: .waits, quick: quick, now: now), log.failure)
        }
        switch outcome {
        case .granted: return id
        case .queued: break
        case .closed, .full, .busy: throw failure ?? Self.ended
        }
        try check(await shell.waitInLine(id, needs: max(needs, refill ?? needs), holding: false))
        return id
    }

    /// The holder `id` waits, keeping its turn, until ``spaceWatermark`` bytes are free; or, when
    /// the storage had no room for its bytes, until it is time to try them again.
    /// - Throws: the buffer's failure (or its end); `CancellationError` when cancelled.
    func waitForSpace(_ id: Int) async throws {
        if let wait = withState({ $0.heldWait }) {
            await shell.wait(for: wait, now: clock.now)
            try Task.checkCancellation()
            return
        }
        try check(await shell.waitInLine(id, needs: spaceWatermark, holding: true))
    }

    /// Takes the turn for the thread writer `id` once `needs` bytes are free, parked in line.
    /// - Throws: the buffer's failure (or its end); `CancellationError` once the thread's
    ///   producer was cancelled (``cancelThreadWriter(_:)``).
    func takeTurnBlocking(_ id: Int, needs: Int, refill: Int? = nil, quick: Bool) throws {
        let now = ContinuousClock.now
        let (outcome, failure) = shell.locked { log in
            (log.arrive(id, needs: needs, patience: .waits, quick: quick, now: now), log.failure)
        }
        switch outcome {
        case .granted: return
        case .queued: break
        case .closed, .full, .busy: throw failure ?? Self.ended
        }
        try check(shell.parkInLine(id, needs: max(needs, refill ?? needs), patience: .waits, holding: false))
    }

    /// The thread writer `id`, holding the turn, parks until ``spaceWatermark`` bytes are free;
    /// or, when the storage had no room for its bytes, until it is time to try them again.
    func waitForSpaceBlocking(_ id: Int) throws {
        let (wait, cancelled) = withState { ($0.heldWait, $0.isCancelledWriter(id)) }
        if let wait {
            if cancelled { throw CancellationError() }
            shell.park(for: wait, now: clock.now)
            return
        }
        try check(shell.parkInLine(id, needs: spaceWatermark, patience: .waits, holding: true))
    }

    /// Takes the turn for a writer of `needs` bytes that must not wait for space: at once, or
    /// after the writers ahead that only copy (the calling thread parks that long, as on a
    /// lock). Returns `.granted`, `.full`, `.busy` or `.closed`; never `.queued`.
    func tryTakeTurn(_ id: Int, needs: Int) -> WriterLine<Int>.Outcome {
        let now = ContinuousClock.now
        let outcome = shell.locked { $0.arrive(id, needs: needs, patience: .brief, quick: true, now: now) }
        guard outcome == .queued else { return outcome }
        if case .turn(let outcome) = shell.parkInLine(id, needs: needs, patience: .brief, holding: false) { return outcome }
        return .closed
    }

    /// Ends the waits of the thread writer `id`, now and later, with `CancellationError`.
    func cancelThreadWriter(_ id: Int) {
        shell.act { $0.cancelWriter(id, forever: true) }
    }

    /// Writer `id` gives the turn back; the next in line gets it when it can go on. Bytes it
    /// holds that the storage had no room for are dropped (it was stopped or cancelled).
    func leaveTurn(_ id: Int) {
        shell.act { $0.leaveTurn(id) }
    }

    /// Goes on after a writer's wait: granted, or throws why not.
    private func check(_ wakeup: LogWakeup) throws {
        switch wakeup {
        case .turn(.granted), .ready: return
        case .cancelled: throw CancellationError()
        case .turn: throw failure ?? Self.ended
        }
    }
}
