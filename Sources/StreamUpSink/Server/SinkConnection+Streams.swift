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
        /// The body was merged; the stream file is this long now.
        case appended(length: Int)
        /// The body starts past the stream's end: it was answered `409`; go on with this.
        case answered(Next)
    }

    /// Merges the stored body of `finished` into its stream and removes the body file;
    /// `summary.storedFile` becomes the stream file (nothing, on a gap).
    ///
    /// - Throws: the storage error; nothing was answered and the body file is kept.
    func mergeStream(
        _ finished: InFlight, _ summary: inout RequestBody.Summary, trailers: [HTTPField], keepAlive: Bool,
        _ socket: borrowing Socket
    ) throws(SinkError) -> StreamMerge {
        guard let stream = finished.stream, let streams = context.streams, let bodyPath = summary.storedFile else {
            return .notAStream
        }
        let outcome = try streams.merge(
            streamID: stream.id, offset: stream.offset, bodyPath: bodyPath, bodyLength: summary.byteCount)
        _ = unlink(bodyPath)
        switch outcome {
        case .appended(let length):
            summary.storedFile = streams.path(forStreamID: stream.id)
            return .appended(length: length)
        case .gap(let expected):
            summary.storedFile = nil
            report(finished, summary, trailers: trailers, status: 409, failure: "gap in stream: expected offset \(expected)")
            let response = HTTPResponse.json(
                status: 409, body: HTTPResponse.streamGap(expectedOffset: expected), close: !keepAlive)
            return .answered((try? socket.send(response)) == nil ? .close : (keepAlive ? .keepReading : .close))
        }
    }

    /// The `Streamup-Stream-Id` and `Streamup-Offset` of a request, or `nil` when it has neither.
    static func streamHeaders(_ head: HTTPRequestHead) throws(HTTPParseError) -> (id: String, offset: Int)? {
        let ids = head.headers.values(named: "streamup-stream-id")
        let offsets = head.headers.values(named: "streamup-offset")
        if ids.isEmpty && offsets.isEmpty { return nil }
        guard ids.count == 1, offsets.count == 1 else {
            throw .badRequest("a stream request needs exactly one Streamup-Stream-Id and one Streamup-Offset")
        }
        let id = ids[0].trimmingWhitespace()
        guard StreamStore.fileName(forStreamID: id) != nil else {
            throw .badRequest("empty Streamup-Stream-Id")
        }
        let text = offsets[0].trimmingWhitespace()
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let offset = Int(text) else {
            throw .badRequest("Streamup-Offset is not a non-negative integer")
        }
        return (id, offset)
    }
}
