import Foundation

/// A producer's handle on the buffer between it and the upload.
///
/// Writes go into the fixed buffer only when it has space; when it is full, the async `write`
/// suspends until the reader (one request) or an acknowledgement (segments) frees some, so a
/// slow server slows the producer instead of growing memory. Once the upload has failed or been
/// cancelled, every write throws ``StreamUpError``.
///
/// It waits on the buffer's own space notification, which fires on the same condition as a
/// bound output stream's `.hasSpaceAvailable` event but only when a writer is actually waiting:
/// no event is dispatched per write on the hot path.
///
/// Thread safety: one writer at a time (a single task or thread); the counters may be read from
/// anywhere. Wake-ups come from the reading thread, outside the buffer's lock.
public final class StreamWriter: Sendable {
    let buffer: any WritableBuffer
    private let space = SpaceSignal()

    /// A writer into `buffer`.
    init(buffer: some WritableBuffer) {
        self.buffer = buffer
        buffer.setSpaceObserver(space)
    }

    /// Writes every byte of `bytes`, suspending while the buffer is full.
    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        try await write(bytes, mark: nil)
    }

    /// Writes every byte of `bytes`, suspending while the buffer is full.
    public func write(_ bytes: [UInt8]) async throws {
        try await write(bytes, mark: nil)
    }

    /// Writes `bytes`, which stand for `mark`'s source bytes (see the pointer form).
    func write(_ bytes: [UInt8], mark: SourceMark?) async throws {
        var offset = 0
        while offset < bytes.count {
            let piece = mark.map { Self.mark($0, forBytes: offset, of: bytes.count) }
            let outcome = try bytes.withUnsafeBytes { source in
                try buffer.withWritableSpace(maxLength: source.count - offset, mark: piece) { space in
                    space.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + space.count]))
                    return space.count
                }
            }
            switch outcome {
            case .wrote(let count): offset += count
            case .full: try await space.wait(for: buffer)
            case .failed: throw failure
            }
        }
    }

    /// Writes `bytes`, which stand for the source bytes `mark` describes (a verbatim copy, or
    /// records made from source bytes `start..<end`); the mark lets an acknowledgement be
    /// turned back into a source position.
    func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) async throws {
        var offset = 0
        while offset < bytes.count {
            let piece = mark.map { Self.mark($0, forBytes: offset, of: bytes.count) }
            let outcome = try buffer.withWritableSpace(maxLength: bytes.count - offset, mark: piece) { space in
                space.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + space.count]))
                return space.count
            }
            switch outcome {
            case .wrote(let count): offset += count
            case .full: try await space.wait(for: buffer)
            case .failed: throw failure
            }
        }
    }

    /// The mark of the piece of a write that starts `offset` bytes into it: verbatim bytes map
    /// one to one; records made from source bytes keep the whole range on every piece (the
    /// buffer joins the pieces, and an acknowledgement inside them goes back to their start).
    package static func mark(_ mark: SourceMark, forBytes offset: Int, of total: Int) -> SourceMark {
        guard mark.end == nil else { return mark }
        return .verbatim(mark.source, from: mark.start + Int64(offset))
    }

    /// Writes all of `bytes` if they fit in the free space now, else nothing; never waits.
    /// Returns whether they were written. Keeps records whole when dropping under pressure.
    public func writeIfSpace(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard !bytes.isEmpty else { return true }
        guard buffer.writableCount >= bytes.count else {
            if buffer.failure != nil { throw failure }
            return false
        }
        // Only this writer adds bytes and free space only grows meanwhile; the space offered is
        // contiguous, so it may take two pieces at the buffer's wrap.
        var offset = 0
        while offset < bytes.count {
            let outcome = try buffer.withWritableSpace(maxLength: bytes.count - offset, mark: nil) { space in
                space.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + space.count]))
                return space.count
            }
            guard case .wrote(let count) = outcome, count > 0 else { throw failure }
            offset += count
        }
        return true
    }

    /// Lets `fill` write into free buffer space in place (for example `read(2)` straight into
    /// the buffer); suspends first while the buffer is full. Returns what `fill` returned.
    public func fill(maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) async throws -> Int {
        while true {
            switch try buffer.withWritableSpace(maxLength: maxLength, mark: nil, fill) {
            case .wrote(let count): return count
            case .full: try await space.wait(for: buffer)
            case .failed: throw failure
            }
        }
    }

    /// Suspends until the buffer has free space (returns at once if it has some now).
    public func waitForSpace() async throws {
        while buffer.writableCount == 0 {
            if buffer.failure != nil { throw failure }
            try await space.wait(for: buffer)
        }
    }

    /// Bytes that fit in the buffer now.
    public var availableSpace: Int { buffer.writableCount }

    /// Bytes written so far.
    public var bytesWritten: Int { buffer.bytesWritten }

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
        buffer.finishWriting(stopped: stopped)  // a write waiting for space is woken by the buffer and sees the end
    }

    /// Ends the body with `error` and wakes a waiting write.
    func fail(_ error: StreamUpError) {
        buffer.failWriting(error)  // a write waiting for space is woken by the buffer and throws
    }

    private var failure: StreamUpError {
        buffer.failure ?? StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")
    }

    /// Runs `body` on a thread of its own, for producers that block in system calls (such as a
    /// `read(2)` from a pipe). `body` writes with the blocking methods of the handle it gets.
    package func runBlocking(_ body: @escaping @Sendable (BlockingStreamWriter) throws -> Void) async throws {
        let blocking = BlockingStreamWriter(buffer: buffer, space: space)
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
            space.cancel()
        }
    }
}
