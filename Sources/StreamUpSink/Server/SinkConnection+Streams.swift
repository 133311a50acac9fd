import Foundation
import StreamUpHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// De-duplicated streams (``StreamStore``): a request's stream headers, and merging its stored
// body into the stream file once it has ended.
extension SinkConnection {
    /// What merging a finished body into its stream came to.
    enum StreamMerge {
        /// The request belongs to no stream, or its body was not stored.
        case notAStream
        /// The body was joined or held aside (answer 2xx); the stream file is this long now.
        case stored(length: Int)
        /// The stream holds as much aside as it may: it was answered `503`; go on with this.
        case answered(Next)
    }

    /// Merges the stored body of `finished` into its stream (see ``StreamStore``: joined, or held
    /// aside when it starts past the end); `summary.storedFile` becomes the stream file (nothing,
    /// when refused).
    ///
    /// - Throws: the storage error; nothing was answered.
    func mergeStream(
        _ finished: InFlight, _ summary: inout RequestBody.Summary, trailers: [HTTPField], keepAlive: Bool,
        _ socket: borrowing Socket
    ) throws(SinkError) -> StreamMerge {
        guard let stream = finished.stream, let streams = context.streams, let bodyPath = summary.storedFile else {
            return .notAStream
        }
        let outcome = try streams.merge(
            streamID: stream.id, offset: stream.offset, bodyPath: bodyPath, bodyLength: summary.byteCount)
        switch outcome {
        case .appended(let length), .heldAside(let length):
            summary.storedFile = streams.path(forStreamID: stream.id)
            return .stored(length: length)
        case .refused(let refusal, let length):
            summary.storedFile = nil
            let reason = Self.refusalReason(refusal, bodyBytes: summary.byteCount, length: length, limits: streams.limits)
            report(finished, summary, trailers: trailers, status: 503, failure: reason + ": retry")
            let response = HTTPResponse.json(
                status: 503, body: HTTPResponse.error(status: 503, reason: reason, expectedOffset: length), close: !keepAlive,
                extraHeaders: [SinkHeaderField(name: "Retry-After", value: "1")])
            return .answered((try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close))
        }
    }

    /// Why a body past the stream's end (which is `length` long) was not held, in words.
    static func refusalReason(_ refusal: StreamState.Refusal, bodyBytes: Int, length: Int, limits: StreamState.Limits) -> String {
        switch refusal {
        case .streamFull:
            "the stream holds as much aside past its end (\(length)) as it may, "
                + "\(size(limits.bytes)) or \(counted(limits.pieces, "body", "bodies"))"
        case .tooLarge:
            "a body of \(counted(bodyBytes, "byte")) past the stream's end (\(length)) is more than may be held aside "
                + "(\(size(min(limits.bytes, limits.sinkBytes)))): it is taken once the bytes before it have arrived"
        case .sinkFull:
            "the sink holds as much aside for all its streams as it may, "
                + "\(size(limits.sinkBytes)) or \(counted(limits.sinkPieces, "body", "bodies"))"
        }
    }

    /// `64 MiB`, `1 GiB`, or `10 bytes` when not a whole number of KiB.
    private static func size(_ bytes: Int) -> String {
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] where bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift) \(unit)"
        }
        return counted(bytes, "byte")
    }

    /// The largest `Streamup-Offset` taken (2^62): far past any real stream, and far enough from
    /// the integer limit that no body's end overflows.
    static let maxStreamOffset = 1 << 62

    /// The `Streamup-Stream-Id` and `Streamup-Offset` of a request, or `nil` when it has neither.
    static func streamHeaders(_ head: HTTPRequestHead) throws(HTTPParseError) -> (id: String, offset: Int)? {
        let ids = head.headers.values(named: "streamup-stream-id")
        let offsets = head.headers.values(named: "streamup-offset")
        if ids.isEmpty && offsets.isEmpty { return nil }
        guard ids.count == 1, offsets.count == 1 else {
            throw .badRequest("a stream request needs exactly one Streamup-Stream-Id and one Streamup-Offset")
        }
        let id = ids[0].trimmingWhitespace()
        guard !id.isEmpty else {
            throw .badRequest("empty Streamup-Stream-Id")
        }
        // Bytes that are not UTF-8 were read as U+FFFD: two such ids would share one stream.
        guard !id.unicodeScalars.contains("\u{FFFD}") else {
            throw .badRequest("Streamup-Stream-Id is not UTF-8 text")
        }
        guard StreamStore.fileName(forStreamID: id) != nil else {
            throw .badRequest(
                "Streamup-Stream-Id is too long: at most \(StreamStore.maxWrittenIDLength) characters once written as a file name (A-Z a-z 0-9 - _ count one, other bytes three)"
            )
        }
        let text = offsets[0].trimmingWhitespace()
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let offset = Int(text) else {
            throw .badRequest("Streamup-Offset is not a non-negative integer")
        }
        // The end of a body (offset + length) must fit in an integer; no stream reaches 4 EiB.
        guard offset <= maxStreamOffset else {
            throw .badRequest("Streamup-Offset is over \(maxStreamOffset)")
        }
        return (id, offset)
    }
}
