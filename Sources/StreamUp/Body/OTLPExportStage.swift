#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A body stage that turns the records of the stage below (OTLP/JSON `LogRecord`s, each
/// ending in `\n`) into one binary `ExportLogsServiceRequest` (``OTLPExport``): the request's
/// head, then a `log_records` field per record (``OTLPLogRecordTranscoder``).
///
/// A protobuf message gives each nested message's length before its bytes, so the stage reads
/// the lower stage to its end before it hands out a byte: it serves a cut segment, whose body
/// is built complete before its request starts (``WindowBody``), never a live request. The
/// records are transcoded as they are read; what is held is the request's records once, in
/// their binary form (smaller than their JSON).
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
final class OTLPExportStage: BodySource {
    private let lower: any BodySource
    private let export: OTLPExport
    /// The `log_records` fields so far.
    private var records = ProtobufWriter()
    /// The start of a record whose `\n` has not been read yet.
    private var pending: [UInt8] = []
    private let input: UnsafeMutableRawBufferPointer
    /// The request, once the lower stage has ended: its head, then `records`.
    private var head: [UInt8]?
    /// Bytes of the request handed out.
    private var sent = 0

    init(over lower: any BodySource, export: OTLPExport, inputCapacity: Int = 64 * 1024) {
        precondition(inputCapacity > 0, "OTLPExportStage needs an input buffer")
        self.lower = lower
        self.export = export
        input = .allocate(byteCount: inputCapacity, alignment: 16)
    }

    deinit {
        input.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        precondition(buffer.count > 0, "a body read needs room for at least one byte")
        let head: [UInt8]
        if let made = self.head {
            head = made
        } else {
            guard let made = try readRecords(blocking: blocking) else { return .wouldBlock }
            head = made
            self.head = made
        }
        var written = 0
        if sent < head.count {
            let count = min(head.count - sent, buffer.count)
            head.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + sent, byteCount: count) }
            sent += count
            written = count
        }
        let recordsSent = sent - head.count
        if written < buffer.count, recordsSent >= 0, recordsSent < records.bytes.count {
            let count = min(records.bytes.count - recordsSent, buffer.count - written)
            records.bytes.withUnsafeBytes { buffer.baseAddress!.advanced(by: written).copyMemory(from: $0.baseAddress! + recordsSent, byteCount: count) }
            sent += count
            written += count
        }
        return written > 0 ? .bytes(written) : .end
    }

    /// Reads and transcodes the lower stage's records to its end; returns the request's head,
    /// or nil when the lower stage would wait (a non-blocking read).
    private func readRecords(blocking: Bool) throws -> [UInt8]? {
        while true {
            switch try lower.read(into: input, blocking: blocking) {
            case .bytes(let count):
                precondition(count > 0 && count <= input.count, "a body stage read \(count) bytes into \(input.count)")
                take(UnsafeRawBufferPointer(rebasing: input[..<count]))
            case .end:
                if !pending.isEmpty {
                    pending.withUnsafeBytes { add($0) }
                    pending = []
                }
                return export.head(recordBytes: records.bytes.count)
            case .wouldBlock:
                precondition(!blocking, "a body stage answered wouldBlock to a blocking read")
                return nil
            }
        }
    }

    /// Adds the records that end in `bytes`, and keeps the start of one that does not.
    private func take(_ bytes: UnsafeRawBufferPointer) {
        var start = 0
        while start < bytes.count {
            let rest = bytes.baseAddress!.advanced(by: start)
            guard let newline = memchr(rest, 0x0A, bytes.count - start) else {
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
                return
            }
            let end = start + rest.distance(to: newline)
            if pending.isEmpty {
                add(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            } else {
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                pending.withUnsafeBytes { add($0) }
                pending = []
            }
            start = end + 1
        }
    }

    /// Adds one record as a `log_records` field (`ScopeLogs` field 2).
    private func add(_ record: UnsafeRawBufferPointer) {
        records.lengthDelimited(2, OTLPLogRecordTranscoder.logRecord(record))
    }
}

@available(*, unavailable)
extension OTLPExportStage: Sendable {}
