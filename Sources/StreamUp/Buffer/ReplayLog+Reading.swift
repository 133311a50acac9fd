/// What a ``ReplayLog`` answers without changing: values of its cursors and of where the
/// input stands, where an acknowledgement would go, what a read would find, whether a wait is
/// over. Its events (``ReplayLog``'s own file) are the only code that changes it.
extension ReplayLog {
    // MARK: State

    var free: Int { capacity - (written - acknowledged) }
    var isFull: Bool { written - acknowledged >= capacity }
    /// Whether readers see the end of the input (a stop whose losses are being said is not an
    /// end yet).
    var inputEnded: Bool {
        if case .ended = input { true } else { false }
    }
    /// Whether the input itself ended (not a stop): a last record without `\n` is whole.
    var inputReachedEnd: Bool { input == .ended(.reached) }
    /// Whether the writing side was ended (by its end, or a stop being said).
    var isFinished: Bool { input != .open }
    /// Whether nothing more is written: the log failed, or the input ended or is stopping.
    var isClosed: Bool { failure != nil || input != .open }
    /// Whether a live reader waits for input.
    var liveReaderWaits: Bool { waiters.entries.contains { $0.wait == .liveInput } }
    /// The offsets the readable waiters wait past.
    var readableWaitOffsets: [Int] {
        waiters.entries.compactMap { if case .readable(let offset, _, _) = $0.wait { offset } else { nil } }
    }
    /// The wait of the turn's holder whose bytes the storage had no room for; nil when none
    /// are held.
    var heldWait: Wait? {
        guard case .held(let held) = write else { return nil }
        return .storageRoom(acknowledged: held.acknowledged, retryAt: held.retryAt)
    }

    // MARK: Reading

    /// Where an acknowledgement up to `offset` moves the acknowledged offset (never back, never
    /// past the boundary), and the written offset, for telling the storage before
    /// ``acknowledge(upTo:)``.
    func acknowledgement(upTo offset: Int) -> (offset: Int, written: Int) {
        (min(max(offset, acknowledged), boundary), written)
    }

    /// Whether a cut at `offset` of a segment that began at `start` has something new.
    func isReadable(from offset: Int, start: Int) -> Bool {
        boundary > offset || inputEnded || failure != nil || (isFull && boundary > start)
    }

    /// What a live read from the acknowledged offset finds now.
    func liveRead() -> LiveRead {
        if let failure { return .failed(failure) }
        if written > acknowledged { return .bytes(offset: acknowledged, count: written - acknowledged) }
        return inputEnded ? .end : .nothing
    }

    /// Whether `wait` (not a writer's) is over.
    func isDone(_ wait: Wait, now: UploadClock.Instant?) -> Bool {
        switch wait {
        case .turn: false
        case .readable(let offset, let start, let deadline):
            if let deadline, let now, now >= deadline { true } else { isReadable(from: offset, start: start) }
        case .acknowledged(let offset): acknowledged >= offset || failure != nil
        case .liveInput: written > acknowledged || inputEnded || failure != nil
        case .storageRoom(let since, let retryAt):
            if let now, now >= retryAt { true } else { acknowledged > since || isClosed }
        }
    }
}
