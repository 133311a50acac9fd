import CZlib

/// One zlib deflate stream that writes gzip members (RFC 1952): header, deflate data, CRC-32 and
/// length trailer.
///
/// Feed it input with ``encode(input:into:flush:)``; it takes what it can and writes what it has.
/// A `.sync` flush (zlib's `Z_SYNC_FLUSH`) makes everything taken so far decodable by a reader of
/// the output without ending the member; `.finish` (`Z_FINISH`) writes the trailer and ends it.
/// A flush is finished only when a call returns with room left in `output`: while a flushing call
/// fills `output` completely, call again with the same flush (``isFlushing`` says so). Give a
/// flushing call more than six bytes of room, as zlib's manual advises: with less, each repeat
/// call starts a new flush marker and the flush may never end. After `.finish`, ``reset()``
/// starts the next member. See https://zlib.net/manual.html (deflate, deflateReset).
///
/// The `z_stream` lives at a fixed heap address (zlib keeps a pointer back to it) and is ended
/// in `deinit`.
///
/// Thread safety: confined to one thread at a time; not Sendable.
final class GzipEncoder {
    /// How far an ``encode(input:into:flush:)`` call pushes the data it has taken.
    enum Flush: Equatable {
        /// Compress as zlib sees fit; output may lag the input (`Z_NO_FLUSH`).
        case none
        /// Emit everything taken so far, ending on a byte boundary (`Z_SYNC_FLUSH`).
        case sync
        /// Emit everything and the gzip trailer; the member ends (`Z_FINISH`).
        case finish
    }

    /// Level 1, chosen by measurement (`FormatMeasurements.gzipLevels`, 200,000 log lines, one
    /// core): level 1 compresses log lines 3.5:1 at 126 MB/s of input per CPU second, level 6
    /// 4.4:1 at 41 MB/s (ndjson records: 5.4:1 at 176 MB/s against 6.5:1 at 67 MB/s). Level 6
    /// saves about a fifth of the bytes for three times the CPU; a shipper should cost little CPU.
    static let defaultLevel: Int32 = 1

    /// The compression level, 0 (store) to 9.
    let level: Int32
    private let stream: UnsafeMutablePointer<z_stream>
    /// Input has been taken since the last completed flush.
    private(set) var hasUnflushedInput = false
    /// A `.sync` or `.finish` call filled the output before the flush was done.
    private(set) var isFlushing = false
    /// The member's trailer has been written; only ``reset()`` may follow.
    private(set) var isFinished = false

    /// Sets up a gzip stream at `level` (0...9).
    /// - Throws: `StreamUpError` `.invalidConfiguration` for a level outside 0...9, `.io` when
    ///   zlib cannot allocate its state.
    init(level: Int32 = GzipEncoder.defaultLevel) throws(StreamUpError) {
        guard (0...9).contains(level) else {
            throw StreamUpError(.invalidConfiguration, "gzip level \(level) is outside 0...9")
        }
        self.level = level
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = czlib_deflate_init_gzip(stream, level)
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw StreamUpError(.io, "zlib could not set up a gzip stream (deflateInit2 returned \(status))")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Takes what it can of `input` and writes compressed bytes into `output`; returns how many
    /// bytes it took (`consumed`) and wrote (`produced`).
    ///
    /// With `.none` it may take input and write nothing (zlib gathers a block). Calling after the
    /// member finished, with `.none` while a flush is unfinished, or with an empty `output` is a
    /// programming error.
    func encode(
        input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, flush: Flush
    ) -> (consumed: Int, produced: Int) {
        precondition(!isFinished, "GzipEncoder.encode after the member finished; call reset() first")
        precondition(!(isFlushing && flush == .none), "GzipEncoder.encode(.none) during an unfinished flush")
        precondition(output.count > 0, "GzipEncoder.encode needs room for output")
        // zlib counts in 32 bits; a larger buffer is taken in part and the caller comes back.
        let inputCount = min(input.count, Int(UInt32.max))
        let outputCount = min(output.count, Int(UInt32.max))
        stream.pointee.next_in =
            inputCount == 0
            ? nil : UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(inputCount)
        stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_out = uInt(outputCount)
        let status = deflate(stream, flush.zlibValue)
        let step = (
            consumed: inputCount - Int(stream.pointee.avail_in), produced: outputCount - Int(stream.pointee.avail_out)
        )
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        // Z_BUF_ERROR only says no progress was possible (no room, or nothing new to do).
        precondition(
            status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR,
            "zlib deflate returned \(status): the stream state is corrupt")
        if step.consumed > 0 { hasUnflushedInput = true }
        switch flush {
        case .none:
            break
        case .sync:
            let done = stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0
            isFlushing = !done
            if done { hasUnflushedInput = false }
        case .finish:
            isFinished = status == Z_STREAM_END
            isFlushing = !isFinished
            if isFinished { hasUnflushedInput = false }
        }
        return step
    }

    /// Starts a new member with the same level, dropping anything not yet written.
    func reset() {
        let status = deflateReset(stream)
        precondition(status == Z_OK, "zlib deflateReset returned \(status): the stream state is corrupt")
        hasUnflushedInput = false
        isFlushing = false
        isFinished = false
    }
}

@available(*, unavailable)
extension GzipEncoder: Sendable {}

extension GzipEncoder.Flush {
    fileprivate var zlibValue: Int32 {
        switch self {
        case .none: Z_NO_FLUSH
        case .sync: Z_SYNC_FLUSH
        case .finish: Z_FINISH
        }
    }
}
