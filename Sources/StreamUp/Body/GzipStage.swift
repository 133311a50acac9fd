/// A body stage that gzips the stage below it: the body is exactly one gzip member, from header
/// to trailer, that ends when the lower stage ends.
///
/// Live behaviour: a reader never waits while compressed output could be produced. While input
/// is taken but not yet flushed, the lower stage is only asked without blocking; when it has
/// nothing (`wouldBlock`), the stage does a sync flush (`Z_SYNC_FLUSH`) and hands out what the
/// receiver needs to decode everything so far. Input that keeps arriving is sync-flushed at least
/// every `flushDelay` (measured on `clock`) since the first byte taken after the last flush, so a
/// steady trickle is not held back either. It never flushes per line: a flush costs about five
/// bytes plus the end of a deflate block.
///
/// A read fills the reader's buffer as far as it can without waiting, so the reader is not
/// called once per small piece, but returns as soon as a sync flush is handed out.
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
final class GzipStage<C: Clock>: BodySource where C.Duration == Duration {
    /// The longest that taken input stays unflushed while the lower stage keeps delivering.
    let flushDelay: Duration
    private let lower: any BodySource
    private let clock: C
    private let encoder: GzipEncoder
    /// Bytes read from the lower stage; `input[inputStart..<inputEnd]` is not yet compressed.
    private let input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    /// zlib writes here (roomy, so flushes always finish); `staged[stagedStart..<stagedEnd]` is
    /// not yet handed out.
    private let staged: UnsafeMutableRawBufferPointer
    private var stagedStart = 0
    private var stagedEnd = 0
    private var lowerEnded = false
    /// The flush under way, until the encoder reports it done.
    private var flushing: GzipEncoder.Flush?
    /// When the first byte after the last flush was taken.
    private var unflushedSince: C.Instant?
    /// A sync flush just finished: the read returns once its output is handed out.
    private var justFlushed = false

    /// Gzips `lower` at `level`, flushing taken input at least every `flushDelay` on `clock`.
    /// - Throws: `StreamUpError` from ``GzipEncoder/init(level:)``.
    init(
        over lower: any BodySource, level: Int32 = GzipEncoder.defaultLevel, flushDelay: Duration = .milliseconds(250),
        clock: C, inputCapacity: Int = 64 * 1024, outputCapacity: Int = 32 * 1024
    ) throws(StreamUpError) {
        precondition(flushDelay >= .zero, "a flush delay cannot be negative")
        precondition(inputCapacity > 0 && outputCapacity >= 64, "GzipStage buffers too small")
        encoder = try GzipEncoder(level: level)
        self.lower = lower
        self.flushDelay = flushDelay
        self.clock = clock
        input = .allocate(byteCount: inputCapacity, alignment: 16)
        staged = .allocate(byteCount: outputCapacity, alignment: 16)
    }

    deinit {
        input.deallocate()
        staged.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        precondition(buffer.count > 0, "a body read needs room for at least one byte")
        var written = 0
        while written < buffer.count {
            if stagedStart < stagedEnd {
                let count = min(stagedEnd - stagedStart, buffer.count - written)
                buffer.baseAddress!.advanced(by: written).copyMemory(
                    from: staged.baseAddress!.advanced(by: stagedStart), byteCount: count)
                stagedStart += count
                written += count
                continue
            }
            if encoder.isFinished || (justFlushed && written > 0) { break }
            justFlushed = false
            if let flush = flushing {
                compress(flush)
                continue
            }
            if let since = unflushedSince, since.duration(to: clock.now) >= flushDelay {
                flushing = .sync
                continue
            }
            if inputStart < inputEnd {
                compress(.none)
                continue
            }
            if lowerEnded {
                flushing = .finish
                continue
            }
            // Wait in the lower stage only when nothing could be handed out meanwhile.
            let mayBlock = blocking && written == 0 && !encoder.hasUnflushedInput
            switch try lower.read(into: input, blocking: mayBlock) {
            case .bytes(let count):
                precondition(count > 0 && count <= input.count, "a body stage read \(count) bytes into \(input.count)")
                inputStart = 0
                inputEnd = count
            case .end:
                lowerEnded = true
            case .wouldBlock:
                precondition(!mayBlock, "a body stage answered wouldBlock to a blocking read")
                if encoder.hasUnflushedInput {
                    flushing = .sync
                } else if written > 0 {
                    return .bytes(written)
                } else {
                    return .wouldBlock
                }
            }
        }
        return written > 0 ? .bytes(written) : .end
    }

    /// Runs the encoder once from the pending input into the (empty) staging buffer.
    private func compress(_ flush: GzipEncoder.Flush) {
        let pending = UnsafeRawBufferPointer(rebasing: input[inputStart..<inputEnd])
        let step = encoder.encode(input: pending, into: staged, flush: flush)
        inputStart += step.consumed
        stagedStart = 0
        stagedEnd = step.produced
        if encoder.hasUnflushedInput {
            if unflushedSince == nil { unflushedSince = clock.now }
        } else {
            unflushedSince = nil
        }
        if !encoder.isFlushing {
            justFlushed = flush == .sync
            flushing = nil
        }
    }
}

extension GzipStage where C == ContinuousClock {
    /// Gzips `lower` at `level`, flushing taken input at least every `flushDelay`.
    convenience init(
        over lower: any BodySource, level: Int32 = GzipEncoder.defaultLevel, flushDelay: Duration = .milliseconds(250)
    ) throws(StreamUpError) {
        try self.init(over: lower, level: level, flushDelay: flushDelay, clock: ContinuousClock())
    }
}

@available(*, unavailable)
extension GzipStage: Sendable {}
