#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An incremental HTTP/1.1 request parser and body decoder with no I/O.
///
/// Feed it whatever bytes arrived, in pieces of any size (one byte at a time works), and it
/// returns one ``Event`` per call together with how many input bytes it consumed:
///
/// ```
///  head ─▶ .head ─┬─ no body ───────────────────────────────────────────────▶ .end
///                 ├─ Content-Length ─▶ .body … .body ───────────────────────▶ .end
///                 └─ chunked ─▶ (size line ─▶ .body … ─▶ CRLF)* ─▶ 0 ─▶ trailers ─▶ .end
/// ```
///
/// Body bytes are never copied: ``Event/body(_:)`` is a range of the caller's input. Only the
/// head, the chunk-size lines and the trailers are accumulated, each bounded by ``Limits``. No
/// length from the client is used to allocate anything. After `.end` the parser is ready for the
/// next request on the same connection (pipelined bytes stay in the caller's input).
///
/// Calling convention: call ``parse(_:)`` with the unconsumed rest of the input until it returns
/// `.needMoreData` (which always consumes everything it was given). Call it once more with an
/// empty input after a `.head` or `.body` event that consumed everything, because `.end` may be
/// due without further bytes. After a thrown error the parser stays failed.
///
/// Thread safety: a value type that is never shared; owned by one connection.
package struct HTTPRequestParser {
    /// Bounds on the parts the parser has to accumulate.
    package struct Limits: Hashable, Sendable {
        /// Most bytes in the request line plus header section (and, separately, the trailer
        /// section), terminators included. Exceeding it answers 431.
        package var maxHeaderBytes: Int
        /// Most bytes in one chunk-size line, extensions included, terminator excluded.
        /// Exceeding it answers 400.
        package var maxChunkLineBytes: Int

        package init(maxHeaderBytes: Int, maxChunkLineBytes: Int) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxChunkLineBytes = maxChunkLineBytes
        }
    }

    /// What the bytes consumed by one ``parse(_:)`` call amounted to.
    package enum Event: Hashable {
        /// Everything given was consumed; nothing complete yet.
        case needMoreData
        /// The request line and headers are complete.
        case head(HTTPRequestHead)
        /// Body bytes at this range of the input given to this call.
        case body(Range<Int>)
        /// The request is complete (for chunked bodies, with the trailer fields).
        case end(trailers: [HTTPField])
    }

    private enum State: Hashable {
        case head
        case lengthBody(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataEnd(sawCarriageReturn: Bool)
        case trailers
        case failed(HTTPParseError)
    }

    package let limits: Limits
    private var state = State.head
    /// The line being accumulated, without its terminator once complete.
    private var line: [UInt8] = []
    /// Raw bytes (terminators included) taken for `line` so far.
    private var lineRawCount = 0
    /// Raw bytes of the head (or trailer) section before `line`.
    private var sectionBytes = 0
    private var requestLine: RequestLineParts?
    private var fields: [HTTPField] = []

    package init(limits: Limits) {
        self.limits = limits
    }

    /// Where a connection stands between two reads, for its deadlines (the sink's
    /// `ConnectionDeadlines`).
    package enum Progress: Hashable {
        /// No byte of the next request has been consumed.
        case betweenMessages
        /// Part of a request head has been consumed.
        case inHead
        /// The client owes bytes it has announced: the rest of a `Content-Length` body, or of a
        /// chunk whose size line has begun (size line, data, CRLF), or the trailer section.
        case owingBody
        /// A chunked body between two chunks: the client owes nothing until it starts the next
        /// one, so a live stream may pause here.
        case betweenChunks
    }

    /// True when no byte of the next request has been consumed.
    package var isAtMessageStart: Bool {
        state == .head && sectionBytes == 0 && lineRawCount == 0
    }

    /// Where the parser stands; see ``Progress``.
    package var progress: Progress {
        switch state {
        case .head:
            isAtMessageStart ? .betweenMessages : .inHead
        case .chunkSizeLine:
            lineRawCount == 0 ? .betweenChunks : .owingBody
        case .lengthBody, .chunkData, .chunkDataEnd, .trailers:
            .owingBody
        case .failed:
            // The connection closes after a parse error; nothing more is read.
            .inHead
        }
    }

    /// Consumes a prefix of `input` and reports what it completed; see the type's calling convention.
    package mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (event: Event, consumed: Int) {
        var index = 0
        do throws(HTTPParseError) {
            while true {
                switch state {
                case .failed(let error):
                    throw error

                case .head:
                    let budget = limits.maxHeaderBytes - sectionBytes
                    let tooLarge = HTTPParseError.headerTooLarge(
                        "request head exceeds \(limits.maxHeaderBytes) bytes")
                    guard try readLine(input, &index, budget: budget, tooLong: tooLarge) else {
                        return (.needMoreData, index)
                    }
                    if let head = try headLineCompleted() {
                        return (.head(head), index)
                    }

                case .lengthBody(let remaining):
                    if remaining == 0 {
                        reset()
                        return (.end(trailers: []), index)
                    }
                    let take = min(remaining, input.count - index)
                    guard take > 0 else { return (.needMoreData, index) }
                    state = .lengthBody(remaining: remaining - take)
                    return (.body(index..<(index + take)), index + take)

                case .chunkSizeLine:
                    let tooLong = HTTPParseError.badRequest(
                        "chunk-size line exceeds \(limits.maxChunkLineBytes) bytes")
                    guard try readLine(input, &index, budget: limits.maxChunkLineBytes + 2, tooLong: tooLong) else {
                        return (.needMoreData, index)
                    }
                    let size = try HTTPRequestParser.chunkSize(line)
                    line.removeAll(keepingCapacity: true)
                    lineRawCount = 0
                    if size == 0 {
                        state = .trailers
                        sectionBytes = 0
                        fields = []
                    } else {
                        state = .chunkData(remaining: size)
                    }

                case .chunkData(let remaining):
                    let take = min(remaining, input.count - index)
                    guard take > 0 else { return (.needMoreData, index) }
                    state =
                        take == remaining
                        ? .chunkDataEnd(sawCarriageReturn: false)
                        : .chunkData(remaining: remaining - take)
                    return (.body(index..<(index + take)), index + take)

                case .chunkDataEnd(let sawCarriageReturn):
                    guard index < input.count else { return (.needMoreData, index) }
                    let byte = input[index]
                    if byte == ASCII.lineFeed {
                        state = .chunkSizeLine
                    } else if byte == ASCII.carriageReturn && !sawCarriageReturn {
                        state = .chunkDataEnd(sawCarriageReturn: true)
                    } else {
                        throw HTTPParseError.badRequest("missing CRLF after chunk data")
                    }
                    index += 1

                case .trailers:
                    let budget = limits.maxHeaderBytes - sectionBytes
                    let tooLarge = HTTPParseError.headerTooLarge(
                        "trailer section exceeds \(limits.maxHeaderBytes) bytes")
                    guard try readLine(input, &index, budget: budget, tooLong: tooLarge) else {
                        return (.needMoreData, index)
                    }
                    sectionBytes += lineRawCount
                    if line.isEmpty {
                        let trailers = fields
                        reset()
                        return (.end(trailers: trailers), index)
                    }
                    fields.append(try HTTPRequestParser.field(line))
                    line.removeAll(keepingCapacity: true)
                    lineRawCount = 0
                }
            }
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// Appends bytes up to and including the next LF to `line`. Returns true when the line is
    /// complete (terminator stripped: LF or CRLF). Throws `tooLong` when the line's raw bytes
    /// would exceed `budget`.
    private mutating func readLine(
        _ input: UnsafeRawBufferPointer, _ index: inout Int, budget: Int, tooLong: HTTPParseError
    ) throws(HTTPParseError) -> Bool {
        let available = input.count - index
        guard available > 0, let base = input.baseAddress.map({ $0 + index }) else { return false }
        let found = memchr(base, Int32(ASCII.lineFeed), available)
        let take = found.map { UnsafeRawPointer($0) - base + 1 } ?? available
        guard lineRawCount + take <= budget else { throw tooLong }
        line.append(contentsOf: UnsafeRawBufferPointer(start: base, count: take))
        lineRawCount += take
        index += take
        guard found != nil else { return false }
        line.removeLast()
        if line.last == ASCII.carriageReturn {
            line.removeLast()
        }
        return true
    }

    /// Handles one complete line of the head section; returns the head when the section ended.
    private mutating func headLineCompleted() throws(HTTPParseError) -> HTTPRequestHead? {
        sectionBytes += lineRawCount
        defer {
            line.removeAll(keepingCapacity: true)
            lineRawCount = 0
        }
        guard let requestLine else {
            // RFC 9112 §2.2: ignore empty lines before the request line.
            if !line.isEmpty {
                self.requestLine = try HTTPRequestParser.requestLine(line)
            }
            return nil
        }
        guard line.isEmpty else {
            if line[0] == ASCII.space || line[0] == ASCII.tab {
                throw HTTPParseError.badRequest("obsolete header line folding")
            }
            fields.append(try HTTPRequestParser.field(line))
            return nil
        }
        let head = try HTTPRequestHead(requestLine: requestLine, fields: fields)
        switch head.framing {
        case .none: state = .lengthBody(remaining: 0)
        case .length(let count): state = .lengthBody(remaining: count)
        case .chunked: state = .chunkSizeLine
        }
        self.requestLine = nil
        fields = []
        sectionBytes = 0
        return head
    }

    private mutating func reset() {
        state = .head
        line.removeAll(keepingCapacity: true)
        lineRawCount = 0
        sectionBytes = 0
        requestLine = nil
        fields = []
    }
}
