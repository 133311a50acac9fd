import Foundation

/// A handle on the buffer between the producers and the upload, shared by as many tasks and
/// threads as write through it.
///
/// Writes go into the fixed buffer only when it has space; when it is full, the async `write`
/// suspends until the reader (one request) or an acknowledgement (segments) frees some, so a
/// slow server slows the producers instead of growing memory. Once the upload has failed or
/// been cancelled, every write throws ``StreamUpError``.
///
/// Writers take turns, in the order they came: each write goes into the stream whole, never
/// interleaved with another's bytes, and the writes of one task arrive in the order it made
/// them. A write waiting for space keeps its turn; the writers behind it wait in line.
///
/// Thread safety: every method may be called from any task or thread; the line of writers and
/// the buffer's state (its `ReplayLog`) are guarded by the buffer's one lock, and waiting tasks
/// are resumed (waiting threads woken) after it is released.
public final class StreamWriter: Sendable {
    let buffer: ReplayBuffer

    /// A writer into `buffer`.
    init(buffer: ReplayBuffer) {
        self.buffer = buffer
    }

    /// Writes every byte of `bytes`, in one piece of the stream: waits for its turn, then
    /// suspends while the buffer is full. A cancel while waiting for the turn writes nothing; a
    /// cancel after the first bytes went in leaves those in the stream.
    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        try await write(bytes, mark: nil)
    }

    /// Writes every byte of `bytes` (see the pointer form).
    public func write(_ bytes: [UInt8]) async throws {
        try await write(bytes, mark: nil)
    }

    /// Writes all of `bytes` at once: waits in line until they all fit, then writes them
    /// without waiting again. A cancel while it waits writes nothing, so a record is in the
    /// stream whole or not at all.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when `bytes` are more than the
    ///   buffer holds; the upload's failure; `CancellationError` when cancelled while waiting.
    public func writeWhole(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        guard bytes.count <= buffer.capacity else {
            throw StreamUpError(.invalidConfiguration, "a write of \(bytes.count) bytes cannot be whole in a buffer of \(buffer.capacity) bytes")
        }
        // The turn comes with room for all of them; only a full disk makes the write wait then.
        try await write(count: bytes.count, whole: true) { id, offset in
            try bytes.withUnsafeBytes { try buffer.write($0, from: &offset, mark: nil, writer: id, waiting: .suspends) }
        }
    }

    /// Writes `bytes`, which stand for `mark`'s source bytes (see the pointer form).
    func write(_ bytes: [UInt8], mark: SourceMark?) async throws {
        // The array's bytes are reached afresh for each piece: no pointer to them outlives a wait.
        try await write(count: bytes.count, whole: false) { id, offset in
            try bytes.withUnsafeBytes { try buffer.write($0, from: &offset, mark: mark, writer: id, waiting: .suspends) }
        }
    }

    /// Writes `bytes`, which stand for the source bytes `mark` describes (a verbatim copy, or
    /// records made from source bytes `start..<end`); the mark lets an acknowledgement be
    /// turned back into a source position.
    func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) async throws {
        try await write(count: bytes.count, whole: false) { id, offset in
            try buffer.write(bytes, from: &offset, mark: mark, writer: id, waiting: .suspends)
        }
    }

    /// Writes `count` bytes in one turn, from the first byte to the last: `copy` runs the
    /// buffer's one write loop (``ReplayBuffer/write(_:from:mark:writer:waiting:)``) for writer
    /// `id` from an offset, and the task suspends whenever it stops for space. A `whole` write
    /// waits in line until all of it fits; else the turn comes with a good part of the room the
    /// write needs (the buffer's watermark), and until it waits for space the holder only copies.
    private func write(count: Int, whole: Bool, _ copy: (_ id: Int, _ offset: inout Int) throws -> Bool) async throws {
        guard count > 0 else { return }
        let id = try await buffer.takeTurn(needs: whole ? count : 1, refill: whole ? nil : buffer.spaceWatermark, quick: true)
        defer { buffer.leaveTurn(id) }
        var offset = 0
        while try !copy(id, &offset) {
            try await buffer.waitForSpace(id)
        }
    }

    /// The mark of the piece of a write that starts `offset` bytes into it: verbatim bytes map
    /// one to one; records made from source bytes keep the whole range on every piece (the
    /// buffer joins the pieces, and an acknowledgement inside them goes back to their start).
    package static func mark(_ mark: SourceMark, forBytes offset: Int, of total: Int) -> SourceMark {
        guard mark.end == nil else { return mark }
        return .verbatim(mark.source, from: mark.start + Int64(offset))
    }

    /// Writes all of `bytes` if they fit in the free space now, else nothing; never waits for
    /// space (only, as on a lock, for writers ahead that are copying bytes they have room for).
    /// Returns whether they were written. Keeps records whole when dropping under pressure.
    public func writeIfSpace(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try tryWrite(bytes) == .written
    }

    /// What became of a write that must not wait (``tryWrite(_:)``).
    package enum TryWrite: Equatable {
        case written
        /// The bytes did not fit, or the writers ahead wait for space.
        case full
        /// The bytes fit, but a writer ahead holds its turn for a while (it waits for input).
        case busy
    }

    /// Writes all of `bytes` if they fit now (see ``writeIfSpace(_:)``), saying why not.
    /// - Throws: the upload's failure (or the end of its input).
    package func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> TryWrite {
        guard !bytes.isEmpty else { return .written }
        let id = buffer.newWriterID()
        switch buffer.tryTakeTurn(id, needs: bytes.count) {
        case .granted: break
        case .full: return .full
        case .busy: return .busy
        case .closed, .queued: throw failure
        }
        defer { buffer.leaveTurn(id) }
        // The turn came with room for all of them: only a full disk stops the write, and then
        // it writes nothing and finds the storage full, as a full buffer.
        var offset = 0
        return try buffer.write(bytes, from: &offset, mark: nil, writer: id, waiting: .givesUp) ? .written : .full
    }

    /// Lets `fill` write into free buffer space in place (for example `read(2)` straight into
    /// the buffer), in its turn; suspends first while the buffer is full. Returns what `fill`
    /// returned. The turn is held while `fill` runs: other writers wait for it.
    public func fill(maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) async throws -> Int {
        let id = try await buffer.takeTurn(needs: 1, refill: buffer.spaceWatermark, quick: false)
        defer { buffer.leaveTurn(id) }
        while true {
            if let count = try buffer.withWritableSpace(maxLength: maxLength, mark: nil, fill) { return count }
            try await buffer.waitForSpace(id)
        }
    }

    /// Suspends until the buffer has free space (returns at once if it has some now), in line
    /// behind the writers that came first.
    public func waitForSpace() async throws {
        buffer.leaveTurn(try await buffer.takeTurn(needs: 1, quick: true))
    }

    /// Suspends until every write that came before this call is done (or the upload ended).
    package func waitForEarlierWrites() async throws {
        buffer.leaveTurn(try await buffer.takeTurn(needs: 0, quick: true))
    }

    /// Bytes that fit in the buffer now.
    public var availableSpace: Int { buffer.writableCount }

    /// Bytes written so far.
    public var bytesWritten: Int { buffer.bytesWritten }

    /// The most bytes the buffer holds.
    public var capacity: Int { buffer.capacity }

    /// Runs `producer` into this writer in a task of its own: when it returns, the body ends;
    /// when it throws, the body fails with a ``StreamUpError`` saying why (unless the body was
    /// already ended by `finish()`, after which the producer's stop is expected).
    func start(_ producer: some Producer) -> Task<Void, Never> {
        Task { [self] in
            do {
                try await producer.produce(into: self)
                finish()
            } catch {
                guard !isFinished else { return }
                switch error {
                case let error as StreamUpError: fail(error)
                case is CancellationError: fail(StreamUpError(.cancelled, "the upload was cancelled"))
                default: fail(StreamUpError(.producerFailed, "the producer failed: \(error)"))
                }
            }
        }
    }

    /// Whether the body has been ended (by the producer returning or by `finish`).
    var isFinished: Bool { buffer.isFinishedWriting }

    /// Ends the body: the reader gets what is buffered, then the end.
    func finish(stopped: Bool = false) {
        buffer.finishWriting(stopped: stopped)  // writers waiting in line are woken by the buffer and see the end
    }

    /// Ends the body with `error` and wakes the writers waiting in line.
    func fail(_ error: StreamUpError) {
        buffer.failWriting(error)  // writers waiting in line are woken by the buffer and throw
    }

    private var failure: StreamUpError {
        buffer.failure ?? ReplayBuffer.ended
    }

    /// Runs `body` on a thread of its own, for producers that block in system calls (such as a
    /// `read(2)` from a pipe). `body` writes with the blocking methods of the handle it gets,
    /// in line with this writer's other writers; cancelling the calling task ends its waits.
    package func runBlocking(_ body: @escaping @Sendable (BlockingStreamWriter) throws -> Void) async throws {
        let blocking = BlockingStreamWriter(buffer: buffer, id: buffer.newWriterID())
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                let thread = Thread {
                    do {
                        try body(blocking)
                        continuation.resume()
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                thread.name = "streamup.producer"
                thread.start()
            }
        } onCancel: {
            buffer.cancelThreadWriter(blocking.id)
        }
    }
}
