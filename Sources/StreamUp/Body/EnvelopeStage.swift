import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A body stage that wraps the records of the stage below (bytes that each end in `\n`) in an
/// ``Envelope``: `head + prefix + record + suffix + (separator + prefix + record + suffix)… + tail`.
///
/// Records stream through: a record's prefix goes out with its first byte, its suffix as soon as
/// its `\n` is read, so no record is held back and none is buffered whole, however long. A body
/// with no records is `head + tail`. When the lower stage ends inside a record (no final `\n`),
/// that record is closed with its suffix. An empty line is an empty record.
///
/// Given where its records start in their stream (`origin`), a record's prefix names it
/// (``Envelope/identifiedPrefix``): the lower stage's bytes are the stream's from that offset.
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
final class EnvelopeStage: BodySource {
    let envelope: Envelope
    private let lower: any BodySource
    /// Bytes read from the lower stage; `input[inputStart..<inputEnd]` not yet passed on.
    private let input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    /// The envelope piece being handed out, from `literalOffset` on.
    private var literal: [UInt8]
    private var literalOffset = 0
    private let openFirst: [UInt8]
    private let openNext: [UInt8]
    private let closeAndTail: [UInt8]
    private var inRecord = false
    private var sawRecord = false
    private var lowerEnded = false
    private var tailQueued = false
    /// The stream's id (JSON string content) and the offset of the lower stage's first byte,
    /// when the prefixes name their records.
    private let origin: (stream: [UInt8], offset: Int)?
    /// Names records after their source lines, before their place in the stream.
    private let names: RecordNames?
    /// Bytes read from the lower stage before `input`'s.
    private var readBefore = 0

    /// Wraps the records of `lower` in `envelope`; `origin`: the stream's id and the offset of
    /// the first byte of `lower` in it (nil: the records are not named).
    init(over lower: any BodySource, envelope: Envelope, origin: StreamOrigin? = nil, inputCapacity: Int = 64 * 1024) {
        precondition(inputCapacity > 0, "EnvelopeStage needs an input buffer")
        self.lower = lower
        self.envelope = envelope
        input = .allocate(byteCount: inputCapacity, alignment: 16)
        literal = envelope.head
        openFirst = envelope.recordPrefix
        openNext = envelope.separator + envelope.recordPrefix
        closeAndTail = envelope.recordSuffix + envelope.tail
        if let origin, envelope.identifiedPrefix != nil {
            var stream: [UInt8] = []
            JSONString.append(origin.streamID, to: &stream)
            // (`append` quotes: the identity goes inside the envelope's own quotes.)
            self.origin = (Array(stream.dropFirst().dropLast()), origin.offset)
            names = origin.names
        } else {
            self.origin = nil
            names = nil
        }
    }

    deinit {
        input.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        precondition(buffer.count > 0, "a body read needs room for at least one byte")
        var written = 0
        while written < buffer.count {
            if literalOffset < literal.count {
                let count = literal.copyBytes(from: literalOffset, into: buffer, at: written)
                literalOffset += count
                written += count
                continue
            }
            if tailQueued { break }
            if inputStart < inputEnd {
                if !inRecord {
                    inRecord = true
                    if let origin, let identified = envelope.identifiedPrefix {
                        let offset = origin.offset + readBefore + inputStart
                        let prefix =
                            names?.name(at: offset).map { identified.before + $0 + identified.after }
                            ?? identified.prefix(stream: origin.stream, offset: offset)
                        queue(sawRecord ? envelope.separator + prefix : prefix)
                    } else {
                        queue(sawRecord ? openNext : openFirst)
                    }
                    sawRecord = true
                } else {
                    written += passRecordBytes(into: buffer, at: written)
                }
                continue
            }
            if lowerEnded {
                queue(inRecord ? closeAndTail : envelope.tail)
                inRecord = false
                tailQueued = true
                continue
            }
            switch try lower.read(into: input, blocking: blocking && written == 0) {
            case .bytes(let count):
                precondition(count > 0 && count <= input.count, "a body stage read \(count) bytes into \(input.count)")
                readBefore += inputEnd
                inputStart = 0
                inputEnd = count
            case .end:
                lowerEnded = true
            case .wouldBlock:
                precondition(!(blocking && written == 0), "a body stage answered wouldBlock to a blocking read")
                return written > 0 ? .bytes(written) : .wouldBlock
            }
        }
        return written > 0 ? .bytes(written) : .end
    }

    private func queue(_ piece: [UInt8]) {
        literal = piece
        literalOffset = 0
    }

    /// Copies record bytes up to the record's end (or as many as fit); at the end, queues the suffix.
    private func passRecordBytes(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let window = min(inputEnd - inputStart, buffer.count - offset)
        let start = input.baseAddress!.advanced(by: inputStart)
        var count = window
        var endsRecord = false
        if let newline = memchr(start, 0x0A, window) {
            count = start.distance(to: newline) + (envelope.keepsNewline ? 1 : 0)
            endsRecord = true
        }
        buffer.baseAddress!.advanced(by: offset).copyMemory(from: start, byteCount: count)
        inputStart += endsRecord && !envelope.keepsNewline ? count + 1 : count
        if endsRecord {
            inRecord = false
            queue(envelope.recordSuffix)
        }
        return count
    }
}

@available(*, unavailable)
extension EnvelopeStage: Sendable {}

/// Where a body's records start: the stream's id (`Streamup-Stream-Id`) and the offset of the
/// body's first record byte in it.
///
/// Thread safety: a value type.
struct StreamOrigin: Sendable {
    let streamID: String
    let offset: Int
    /// Names records after their source lines where known (``RecordNames``); nil: by their
    /// place in the stream alone.
    var names: RecordNames?
}
