import Foundation

/// The shared heart of a bound stream pair: one fixed block of storage, the ring that indexes it,
/// and the state of both ends.
///
/// One writer thread and one reader thread at a time. Bytes are copied in and out *outside* the
/// lock: the writer only touches free space and the reader only touches unread bytes, and the ring's
/// counters (changed under the lock) keep the two regions apart. The reader blocks in `read` until
/// at least one byte, the end, or a failure is there (DesignNotes, platform fact 3); the writer never blocks.
///
/// Thread safety: every mutable field is in `state`, guarded by `stateLock`; callable from any
/// thread. Events are decided under the lock and delivered after it is released.
final class BoundStreamCore: @unchecked Sendable {
    enum Side: Sendable { case input, output }

    /// Everything that changes, guarded by `stateLock`.
    struct State {
        var ring: ByteRing
        var input = EndState()
        var output = EndState()
        /// The writer closed its side: once the ring is empty the reader is at its end.
        var writerClosed = false
        /// The first failure; it reaches both sides.
        var failure: StreamUpError?
        /// The reader sleeps in `read` and must be woken by a write, close or failure.
        var readerWaiting = false
        /// The writer found the ring full and asked to be told when space appears (or the pair
        /// fails or closes); see `requestSpaceNotification()`.
        var writerWantsSpace = false
        /// Told (outside the lock) when a writer that asked for space may write again.
        var spaceObserver: SpaceSignal?
        /// Tasks waiting until this many bytes were read (or the pair failed or the reader closed).
        var readWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// One end's lifecycle and its armed events.
    struct EndState {
        var opened = false
        var closed = false
        var target: StreamEventTarget?
        var openReported = false
        var errorReported = false
        var endReported = false
        /// Re-armed by every read (input) or write (output), as CFStream does.
        var dataEventArmed = true
    }

    let storage: UnsafeMutableRawPointer
    let capacity: Int
    /// A writer waiting for space is woken once this much is free (a quarter of the ring, at
    /// most 256 KiB), not at the first free byte: one wake-up then refills a good part of the
    /// ring with few large reads. It cannot delay data: the writer waits only while the ring is
    /// full, that is while the reader has plenty to send.
    let spaceWatermark: Int
    private let stateLock = NSCondition()
    private var state: State
    /// Set by the streams after init; weak to avoid a cycle (the streams own the core).
    weak var inputStream: BoundInputStream?
    weak var outputStream: BoundOutputStream?

    init(minimumCapacity: Int) {
        let ring = ByteRing(minimumCapacity: minimumCapacity)
        self.capacity = ring.capacity
        self.spaceWatermark = max(1, min(ring.capacity / 4, 256 * 1024))
        self.storage = UnsafeMutableRawPointer.allocate(byteCount: ring.capacity, alignment: 64)
        self.state = State(ring: ring)
    }

    deinit { storage.deallocate() }

    // MARK: - Reading state

    private func withState<T>(_ body: (inout State) -> T) -> T {
        stateLock.lock()
        defer { stateLock.unlock() }
        return body(&state)
    }

    var bytesWritten: Int { withState { $0.ring.writeCount } }
    var bytesRead: Int { withState { $0.ring.readCount } }
    var bufferedCount: Int { withState { $0.ring.readableCount } }
    var failure: StreamUpError? { withState { $0.failure } }
    /// Whether a `read` is parked waiting for bytes (tests check a reader waits before writing).
    var testOnly_readerIsWaiting: Bool { withState { $0.readerWaiting } }

    func status(of side: Side) -> Stream.Status {
        withState { state in
            let end = side == .input ? state.input : state.output
            if end.closed { return .closed }
            if !end.opened { return .notOpen }
            if state.failure != nil { return .error }
            switch side {
            case .input: return state.writerClosed && state.ring.readableCount == 0 ? .atEnd : .open
            case .output: return state.input.closed ? .atEnd : .open
            }
        }
    }

    /// True until the writer has closed and every byte was read, so that URLSession keeps reading
    /// (it takes `false` as end of body). Also true on failure, so the next `read` reports it.
    var inputHasBytesAvailable: Bool {
        withState { state in
            guard state.input.opened, !state.input.closed else { return false }
            return state.failure != nil || !state.writerClosed || state.ring.readableCount > 0
        }
    }

    var outputHasSpaceAvailable: Bool {
        withState { state in
            state.output.opened && !state.output.closed && state.failure == nil && !state.input.closed
                && state.writerClosed == false && state.ring.writableCount > 0
        }
    }

    // MARK: - Lifecycle

    func open(_ side: Side) {
        update { state in
            switch side {
            case .input: if !state.input.closed { state.input.opened = true }
            case .output: if !state.output.closed { state.output.opened = true }
            }
        }
    }

    /// Closing the output ends the input once its bytes are read; closing the input makes later
    /// writes fail (like a pipe whose reader went away).
    func close(_ side: Side) {
        update { state in
            switch side {
            case .input:
                state.input.closed = true
            case .output:
                state.output.closed = true
                state.writerClosed = true
            }
        }
    }

    /// Fails both sides with `error` (the first failure wins) and wakes a waiting reader.
    func fail(_ error: StreamUpError) {
        update { state in
            if state.failure == nil { state.failure = error }
        }
    }

    func setTarget(_ target: StreamEventTarget?, for side: Side) {
        update { state in
            switch side {
            case .input: state.input.target = target
            case .output: state.output.target = target
            }
        }
    }

    // MARK: - Data

    /// Copies up to `maxLength` bytes in; returns how many fit (0 when full, -1 on failure or
    /// when the reader has closed). Never blocks.
    func write(_ source: UnsafeRawPointer, maxLength: Int) -> Int {
        guard let (first, second) = writableSpans() else { return -1 }
        let firstCount = min(first.count, maxLength)
        let secondCount = min(second.count, maxLength - firstCount)
        (storage + first.offset).copyMemory(from: source, byteCount: firstCount)
        if secondCount > 0 {
            storage.copyMemory(from: source + firstCount, byteCount: secondCount)
        }
        commitWrite(firstCount + secondCount)
        return firstCount + secondCount
    }

    /// Bytes that can be written now without waiting (0 once the pair has failed).
    var writableCount: Int {
        withState { $0.failure == nil && !$0.input.closed ? $0.ring.writableCount : 0 }
    }

    /// The free space, or nil when writing can no longer succeed. Re-arms `.hasSpaceAvailable`.
    private func writableSpans() -> (ByteRing.Span, ByteRing.Span)? {
        update { state in
            state.output.dataEventArmed = true
            if state.output.closed { return nil }
            if state.failure != nil || state.input.closed {
                if state.failure == nil {
                    state.failure = StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")
                }
                return nil
            }
            return state.ring.writableSpans()
        }
    }

    private func commitWrite(_ count: Int) {
        guard count > 0 else { return }
        update { state in
            state.ring.commitWrite(count)
            if state.readerWaiting { stateLock.signal() }
        }
    }

    /// Hands the writer the free space (at most `maxLength` bytes, one contiguous piece) to fill in
    /// place; `fill` returns how many bytes it wrote there. Never blocks, apart from what `fill` does.
    func withWritableSpace(maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> FillOutcome {
        guard var span = writableSpans()?.0 else { return .failed }
        span.count = min(span.count, maxLength)
        guard span.count > 0 else { return .full }
        let written = try fill(UnsafeMutableRawBufferPointer(start: storage + span.offset, count: span.count))
        precondition(written >= 0 && written <= span.count, "filled \(written) of \(span.count) bytes")
        commitWrite(written)
        return .wrote(written)
    }

    /// Copies up to `maxLength` unread bytes out. Waits while the ring is empty and the writer is
    /// still open; returns 0 only at the end, and -1 on failure.
    func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard maxLength > 0 else { return 0 }
        // The wait works on `state` directly, never through an `inout` copy: the writer
        // changes `state` while this thread sleeps and must see `readerWaiting`.
        stateLock.lock()
        state.input.dataEventArmed = true
        while state.ring.readableCount == 0 && !state.writerClosed && state.failure == nil && !state.input.closed {
            state.readerWaiting = true
            stateLock.wait()
            state.readerWaiting = false
        }
        let spans = state.failure == nil ? state.ring.readableSpans() : nil
        stateLock.unlock()
        guard let (first, second) = spans else { return -1 }
        let firstCount = min(first.count, maxLength)
        let secondCount = min(second.count, maxLength - firstCount)
        UnsafeMutableRawPointer(destination).copyMemory(from: storage + first.offset, byteCount: firstCount)
        if secondCount > 0 {
            UnsafeMutableRawPointer(destination + firstCount).copyMemory(from: storage + second.offset, byteCount: secondCount)
        }
        let total = firstCount + secondCount
        if total > 0 { update { $0.ring.commitRead(total) } }
        return total
    }

    /// Waits until there is something to read (bytes, the end, a failure) or `deadline`
    /// passes; returns whether something is there. For a reader that has work of its own due
    /// at a time (a multiline record's timeout, `FormattingProducer`).
    func waitForInput(until deadline: Date) -> Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        while state.ring.readableCount == 0 && !state.writerClosed && state.failure == nil && !state.input.closed {
            state.readerWaiting = true
            let signalled = stateLock.wait(until: deadline)
            state.readerWaiting = false
            if !signalled { return state.ring.readableCount > 0 || state.writerClosed || state.failure != nil || state.input.closed }
        }
        return true
    }

    // MARK: - Events

    /// Runs `change` under the lock, then works out which events each side is owed and delivers
    /// them outside the lock. `change` must not wait: it works on an `inout` access to `state`.
    @discardableResult
    private func update<T>(_ change: (inout State) throws -> T) rethrows -> T {
        stateLock.lock()
        let result: T
        do {
            result = try change(&state)
        } catch {
            stateLock.unlock()
            throw error
        }
        if state.readerWaiting && (state.failure != nil || state.writerClosed || state.input.closed) {
            stateLock.signal()
        }
        var notifyWriter = false
        if state.writerWantsSpace
            && (state.ring.writableCount >= spaceWatermark || state.failure != nil || state.input.closed
                || state.output.closed)
        {
            state.writerWantsSpace = false
            notifyWriter = true
        }
        let inputEvents = Self.dueEvents(&state.input, side: .input, state: state)
        let outputEvents = Self.dueEvents(&state.output, side: .output, state: state)
        let spaceObserver = notifyWriter ? state.spaceObserver : nil
        var readersDone: [CheckedContinuation<Void, Never>] = []
        if !state.readWaiters.isEmpty {
            let over = state.failure != nil || state.input.closed
            let read = state.ring.readCount
            state.readWaiters.removeAll { waiter in
                guard over || read >= waiter.count else { return false }
                readersDone.append(waiter.continuation)
                return true
            }
        }
        let inputTarget = state.input.target
        let outputTarget = state.output.target
        stateLock.unlock()
        spaceObserver?.signal()
        for waiter in readersDone { waiter.resume() }
        if let inputTarget, !inputEvents.isEmpty, let stream = inputStream {
            inputTarget.deliver(inputEvents, from: StreamReference(stream))
        }
        if let outputTarget, !outputEvents.isEmpty, let stream = outputStream {
            outputTarget.deliver(outputEvents, from: StreamReference(stream))
        }
        return result
    }

    /// The events `end` is owed now, marking them reported. Only a scheduled end gets events; an
    /// unscheduled one keeps them armed until it is scheduled.
    private static func dueEvents(_ end: inout EndState, side: Side, state: State) -> Stream.Event {
        guard end.target != nil, end.opened, !end.closed else { return [] }
        var events: Stream.Event = []
        if !end.openReported {
            end.openReported = true
            events.insert(.openCompleted)
        }
        let brokenPipe = side == .output && state.input.closed
        if state.failure != nil || brokenPipe {
            if !end.errorReported {
                end.errorReported = true
                events.insert(.errorOccurred)
            }
            return events
        }
        switch side {
        case .input:
            if state.ring.readableCount > 0 {
                if end.dataEventArmed {
                    end.dataEventArmed = false
                    events.insert(.hasBytesAvailable)
                }
            } else if state.writerClosed && !end.endReported {
                end.endReported = true
                events.insert(.endEncountered)
            }
        case .output:
            if state.ring.writableCount > 0 && end.dataEventArmed && !state.writerClosed {
                end.dataEventArmed = false
                events.insert(.hasSpaceAvailable)
            }
        }
        return events
    }

    /// Sets who `requestSpaceNotification()` signals: the one ``StreamWriter`` of the output side.
    func setSpaceObserver(_ observer: SpaceSignal) {
        stateLock.lock()
        state.spaceObserver = observer
        stateLock.unlock()
    }

    /// Asks for the space observer to be signalled when the full ring gets space (or the pair fails
    /// or closes). Returns false, asking nothing, when writing can be retried right away.
    func requestSpaceNotification() -> Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        if state.ring.writableCount > 0 || state.failure != nil || state.input.closed || state.output.closed {
            return false
        }
        state.writerWantsSpace = true
        return true
    }

    /// Re-checks the events owed (after a target or delegate was set).
    func pumpEvents() { update { _ in } }

    /// Suspends until `count` bytes in all have been read, or the pair failed or its reader closed.
    func waitUntilRead(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = withState { state -> Bool in
                if state.ring.readCount >= count || state.failure != nil || state.input.closed { return true }
                state.readWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
