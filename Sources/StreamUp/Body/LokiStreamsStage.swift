/// A body stage that makes a Loki push of the records of the stage below (Loki entries, each
/// ending in `\n`): `head`, then stream objects gathered per host and shard by ``LokiStreams``,
/// then `tail`.
///
/// Entries are gathered in batches: a batch ends where the lower stage ends, where it has
/// nothing more for now (a live body), or once a batch's bytes of whole records are held; each
/// batch adds its own stream objects (a push may name one stream twice; Loki takes both). A
/// segment's body (1 MiB for Loki) is one batch. Memory is a batch and its stream objects, at
/// most ``defaultBatchBytes`` and one record, twice. A body with no entries carries one empty stream
/// (a push of no stream is refused).
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
final class LokiStreamsStage: BodySource {
    /// The most bytes of whole records a batch gathers before its streams are written.
    static let defaultBatchBytes = 1 << 20

    private let lower: any BodySource
    private let streams: LokiStreams
    private let tail: [UInt8]
    private let batchBytes: Int
    private let input: UnsafeMutableRawBufferPointer
    /// Bytes read from below and not yet gathered into a batch (whole records, then part of one).
    private var pending: [UInt8] = []
    /// How many bytes of `pending` are whole records (up to and including its last `\n`).
    private var wholeRecords = 0
    /// What is handed out, from `outputOffset` on.
    private var output: [UInt8]
    private var outputOffset = 0
    private var wroteStreams = false
    private var lowerEnded = false
    private var finished = false

    /// Gathers the entries of `lower` into `streams`, between `head` and `tail` (for a push,
    /// `{"streams":[` and `]}`), a batch written once it holds `batchBytes` of whole records.
    init(
        over lower: any BodySource, streams: LokiStreams, head: [UInt8], tail: [UInt8], batchBytes: Int = LokiStreamsStage.defaultBatchBytes,
        inputCapacity: Int = 64 * 1024
    ) {
        precondition(inputCapacity > 0 && batchBytes > 0, "LokiStreamsStage needs an input buffer and batches")
        self.batchBytes = batchBytes
        self.lower = lower
        self.streams = streams
        self.tail = tail
        output = head
        input = .allocate(byteCount: inputCapacity, alignment: 16)
    }

    deinit {
        input.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        precondition(buffer.count > 0, "a body read needs room for at least one byte")
        var written = 0
        while written < buffer.count {
            if outputOffset < output.count {
                let count = output.copyBytes(from: outputOffset, into: buffer, at: written)
                outputOffset += count
                written += count
                continue
            }
            if finished { break }
            if lowerEnded {
                wholeRecords = pending.count
                writeBatch()
                if !wroteStreams { streams.appendEmptyStream(to: &output) }
                output += tail
                finished = true
                continue
            }
            if wholeRecords >= batchBytes {
                writeBatch()
                continue
            }
            // Wait below only when there is nothing to hand out and no whole record to write.
            let mayBlock = blocking && written == 0 && wholeRecords == 0
            switch try lower.read(into: input, blocking: mayBlock) {
            case .bytes(let count):
                precondition(count > 0 && count <= input.count, "a body stage read \(count) bytes into \(input.count)")
                let read = UnsafeRawBufferPointer(rebasing: input[0..<count])
                pending.append(contentsOf: read)
                if let last = read.lastIndex(of: 0x0A) { wholeRecords = pending.count - count + last + 1 }
            case .end:
                lowerEnded = true
            case .wouldBlock:
                precondition(!mayBlock, "a body stage answered wouldBlock to a blocking read")
                if wholeRecords > 0 {
                    writeBatch()
                } else {
                    return written > 0 ? .bytes(written) : .wouldBlock
                }
            }
        }
        return written > 0 ? .bytes(written) : .end
    }

    /// Writes the streams of the whole records held as the next output, and forgets them.
    private func writeBatch() {
        output.removeAll(keepingCapacity: true)
        outputOffset = 0
        guard wholeRecords > 0 else { return }
        let before = output.count
        if wroteStreams { output.append(0x2C) }
        pending.withUnsafeBytes { streams.appendStreams(of: UnsafeRawBufferPointer(rebasing: $0[0..<wholeRecords]), to: &output) }
        if output.count == before + (wroteStreams ? 1 : 0) {
            output.removeSubrange(before...)  // only empty records: no stream, no comma
        } else {
            wroteStreams = true
        }
        pending.removeFirst(wholeRecords)
        wholeRecords = 0
    }
}

@available(*, unavailable)
extension LokiStreamsStage: Sendable {}
