import Foundation
import StreamUpSystem

/// The complete body of one segment request, built before the request starts: the cut
/// segment's records (``WindowSource``) through the body stages of its ``BodyEncoding``
/// (envelope, gzip), read to their end. The request carries its `Content-Length`, so
/// URLSession never waits for a body byte (DESIGN.md facts 3 and 10) and no
/// `Transfer-Encoding: chunked` is sent.
///
/// URLSession reads it as a stream, so that a body libcurl must re-send (a reused connection
/// that turned out dead) goes out again from its start: each attempt gets a fresh stream over
/// the same bytes (corelibs does not rewind a `Data` body for a re-send, measured: the short
/// re-sent body met 408). Resumable appends refuse a re-send instead: a PATCH re-sent with its
/// stale `Upload-Offset` after part of it arrived would conflict; the request fails and HEAD
/// says where to go on.
///
/// Memory: the body is a copy of at most one segment (its envelope added, or gzipped), held
/// while its request runs; the records themselves stay in the replay buffer until acknowledged.
///
/// Thread safety: `data` is immutable; the streams handed out are guarded by a `Mutex`
/// (URLSession asks for them on its delegate queue, the delivery task reads what was sent).
final class WindowBody: RequestBody, Sendable {
    private struct Current {
        var stream: StreamReference<BodyInputStream>?
        var refused: StreamUpError?
        /// The most bytes any stream of this request handed out.
        var furthest = 0
    }
    /// The stream range the body carries.
    let range: Range<Int>
    let data: Data
    private let allowsResend: Bool
    private let current = Mutex(Current())

    /// Builds the body of `range` of `buffer` as `encoding` says.
    /// - Throws: ``StreamUpError`` when a stage refuses the records (a multipart boundary in
    ///   them) or the storage cannot be read.
    init(_ range: Range<Int>, of buffer: ReplayBuffer, encoding: BodyEncoding, allowsResend: Bool) throws {
        self.range = range
        self.allowsResend = allowsResend
        self.data = try Self.build(encoding.stages(over: WindowSource(buffer: buffer, range: range)), expected: range.count)
    }

    /// Reads `top` to its end. The window's end is fixed, so no stage ever waits for input.
    private static func build(_ top: any BodySource, expected: Int) throws -> Data {
        var body = Data(count: max(expected + 64, 4096))
        var filled = 0
        while true {
            if filled == body.count { body.count += max(64 * 1024, body.count / 4) }
            let read = try body.withUnsafeMutableBytes { bytes in
                try top.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled...]), blocking: false)
            }
            switch read {
            case .bytes(let count):
                filled += count
            case .end:
                body.count = filled
                return body
            case .wouldBlock:
                preconditionFailure("a body stage over a cut segment said it would wait")
            }
        }
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let previous = current.withLock { current -> BodyInputStream? in
            current.furthest = max(current.furthest, current.stream?.value.bytesRead ?? 0)
            return current.stream?.value
        }
        if attempt > 1, !allowsResend {
            // URLSession keeps reading the old stream when given none (fact 2): fail it.
            let again = StreamUpError(.bodyNotRewindable, "URLSession asked to send the append again")
            previous?.fail(again)
            current.withLock { $0.refused = again }
            return nil
        }
        let stream = BodyInputStream(source: DataSource(data))
        current.withLock { $0.stream = StreamReference(stream) }
        return stream
    }

    /// The most bytes any stream of this request handed to URLSession (a stream libcurl gave
    /// up on for a re-send counts: its bytes went out).
    var bytesSent: Int {
        current.withLock { max($0.furthest, $0.stream?.value.bytesRead ?? 0) }
    }

    var failure: StreamUpError? {
        current.withLock { $0.refused ?? ($0.stream?.value.streamError as? StreamUpError) }
    }

    /// Nothing waits on a complete body.
    func close() {}

    func abort(_ error: StreamUpError) {
        current.withLock { $0.stream?.value }?.fail(error)
    }
}

/// The bytes of a complete body as a body stage.
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
private final class DataSource: BodySource {
    private let data: Data
    private var position = 0

    init(_ data: Data) { self.data = data }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        guard position < data.count else { return .end }
        let count = min(buffer.count, data.count - position)
        data.withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress!.advanced(by: position), byteCount: count)
        }
        position += count
        return .bytes(count)
    }
}
