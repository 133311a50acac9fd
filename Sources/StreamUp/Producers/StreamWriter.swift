import Foundation

/// A producer's handle on the writing side of the upload's bound stream pair.
///
/// Writes go into the fixed buffer only when it has space; when it is full, the async `write`
/// suspends until the output side has space again (the reader drained some), so a slow server
/// slows the producer instead of growing memory. Once the upload has failed or been cancelled,
/// every write throws ``StreamUpError``.
///
/// It waits on the pair's own space notification, which fires on the same condition as the
/// output stream's `.hasSpaceAvailable` event but only when a writer is actually waiting: no
/// event is dispatched per write on the hot path.
///
/// Thread safety: one writer at a time (a single task or thread); the counters may be read from
/// anywhere. Wake-ups come from the reading thread, outside the pair's lock.
public final class StreamWriter: Sendable {
    private let output: StreamReference<BoundOutputStream>
    private let space = SpaceSignal()

    init(output: BoundOutputStream) {
        self.output = StreamReference(output)
        output.core.setSpaceObserver(space)
        output.open()
    }

    private var stream: BoundOutputStream { output.value }

    /// Writes every byte of `bytes`, suspending while the buffer is full.
    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        guard var next = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = stream.core.write(next, maxLength: remaining)
            if written > 0 {
                next += written
                remaining -= written
            } else if written == 0 {
                try await space.wait(for: stream.core)
            } else {
                throw failure
            }
        }
    }

    /// Writes every byte of `bytes`, suspending while the buffer is full.
    public func write(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                stream.core.write(buffer.baseAddress! + offset, maxLength: buffer.count - offset)
            }
            if written > 0 {
                offset += written
            } else if written == 0 {
                try await space.wait(for: stream.core)
            } else {
                throw failure
            }
        }
    }

    /// Writes all of `bytes` if they fit in the free space now, else nothing; never waits.
    /// Returns whether they were written. Keeps records whole when dropping under pressure.
    public func writeIfSpace(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard let base = bytes.baseAddress else { return true }
        guard stream.core.writableCount >= bytes.count else {
            if stream.core.failure != nil { throw failure }
            return false
        }
        // Only this writer adds bytes, and free space only grows meanwhile: all of it fits.
        let written = stream.core.write(base, maxLength: bytes.count)
        if written < 0 { throw failure }
        precondition(written == bytes.count, "free space shrank under the single writer")
        return true
    }

    /// Lets `fill` write into free buffer space in place (for example `read(2)` straight into
    /// the buffer); suspends first while the buffer is full. Returns what `fill` returned.
    public func fill(maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) async throws -> Int {
        while true {
            if let written = try stream.write(maxLength: maxLength, fill) { return written }
            try await space.wait(for: stream.core)
        }
    }

    /// Suspends until the buffer has free space (returns at once if it has some now).
    public func waitForSpace() async throws {
        while stream.core.writableCount == 0 {
            if stream.core.failure != nil { throw failure }
            try await space.wait(for: stream.core)
        }
    }

    /// Bytes that fit in the buffer now.
    public var availableSpace: Int { stream.core.writableCount }

    /// Bytes written so far.
    public var bytesWritten: Int { stream.core.bytesWritten }

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
    var isFinished: Bool { stream.core.status(of: .output) == .closed }

    /// Ends the body: the reader gets what is buffered, then the end.
    func finish() {
        stream.close()  // a write waiting for space is woken by the pair and sees the end
    }

    /// Ends the body with `error` and wakes a waiting write.
    func fail(_ error: StreamUpError) {
        stream.fail(error)  // a write waiting for space is woken by the pair and throws
    }

    private var failure: StreamUpError {
        stream.core.failure ?? StreamUpError(.bodyStreamClosed, "the upload stopped reading the body")
    }

    /// Runs `body` on a thread of its own, for producers that block in system calls (such as a
    /// `read(2)` from a pipe). `body` writes with the blocking methods of the handle it gets.
    func runBlocking(_ body: @escaping @Sendable (BlockingStreamWriter) throws -> Void) async throws {
        let blocking = BlockingStreamWriter(stream: output, space: space)
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

/// The blocking form of ``StreamWriter`` for a producer running on its own thread.
///
/// Thread safety: confined to the producer's thread.
struct BlockingStreamWriter: Sendable {
    let stream: StreamReference<BoundOutputStream>
    let space: SpaceSignal

    /// Lets `fill` write into free space in place, blocking first while the buffer is full.
    /// Returns what `fill` returned; throws once the upload failed or the producer was cancelled.
    func fill(maxLength: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int {
        while true {
            if let written = try stream.value.write(maxLength: maxLength, fill) { return written }
            try space.waitBlocking(for: stream.value.core)
        }
    }
}
