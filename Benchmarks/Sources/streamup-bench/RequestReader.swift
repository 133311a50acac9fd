import Foundation

/// A small incremental HTTP/1.1 request reader for the bench's own receivers: request heads,
/// bodies framed by `Content-Length` or chunked coding (extensions and trailers skipped), and
/// pipelined requests on one connection. It reads what the compared clients send, nothing more.
///
/// Thread safety: a value type confined to its connection's thread.
struct RequestReader {
    private enum State {
        /// Collecting a head into `line`.
        case head
        /// Bytes left of a `Content-Length` body.
        case fixed(Int)
        /// Collecting a chunk-size line into `line`.
        case chunkLine
        /// Bytes left of a chunk's data.
        case chunkData(Int)
        /// Bytes left of the CRLF after a chunk's data.
        case chunkEnd(Int)
        /// Collecting a trailer line into `line`; an empty one ends the request.
        case trailer
    }

    /// The longest head or line accepted.
    static let maxLineBytes = 64 * 1024

    private var state = State.head
    private var line: [UInt8] = []

    /// True between requests (nothing of a next request read yet).
    var isAtMessageStart: Bool {
        if case .head = state { return line.isEmpty }
        return false
    }

    /// Reads `input`: `onHead` with whether the client waits for `100 Continue`, `onBody` for
    /// each run of body bytes (a range of `input`), `onEnd` when a request has ended.
    mutating func feed(
        _ input: UnsafeRawBufferPointer, onHead: (_ expectsContinue: Bool) -> Void, onBody: (UnsafeRawBufferPointer) -> Void,
        onEnd: () -> Void
    ) throws(BenchError) {
        var index = 0
        while index < input.count {
            switch state {
            case .head, .chunkLine, .trailer:
                let byte = input[index]
                index += 1
                line.append(byte)
                guard line.count <= Self.maxLineBytes else { throw BenchError("a request head or line over 64 KiB") }
                guard byte == UInt8(ascii: "\n") else { continue }
                try lineEnded(onHead: onHead, onEnd: onEnd)
            case .fixed(let remaining), .chunkData(let remaining):
                let count = min(remaining, input.count - index)
                onBody(UnsafeRawBufferPointer(rebasing: input[index..<(index + count)]))
                index += count
                if case .fixed = state {
                    state = remaining == count ? .head : .fixed(remaining - count)
                    if remaining == count { onEnd() }
                } else {
                    state = remaining == count ? .chunkEnd(2) : .chunkData(remaining - count)
                }
            case .chunkEnd(let remaining):
                index += 1
                state = remaining == 1 ? .chunkLine : .chunkEnd(remaining - 1)
            }
        }
    }

    /// `line` ends in `\n`: a head is complete at its empty line; a chunk-size or trailer line
    /// is complete.
    private mutating func lineEnded(onHead: (Bool) -> Void, onEnd: () -> Void) throws(BenchError) {
        let text = String(decoding: line, as: UTF8.self)
        switch state {
        case .head:
            guard text.hasSuffix("\r\n\r\n") || text.hasSuffix("\n\n") else { return }
            line.removeAll(keepingCapacity: true)
            var chunked = false
            var length = 0
            var expectsContinue = false
            for field in text.split(whereSeparator: \.isNewline).dropFirst() {
                let parts = field.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces).lowercased()
                switch parts[0].lowercased() {
                case "transfer-encoding": chunked = value.contains("chunked")
                case "content-length": length = Int(value) ?? -1
                case "expect": expectsContinue = value == "100-continue"
                default: break
                }
            }
            guard length >= 0 else { throw BenchError("a request with a bad Content-Length") }
            onHead(expectsContinue)
            if chunked {
                state = .chunkLine
            } else if length > 0 {
                state = .fixed(length)
            } else {
                onEnd()
            }
        case .chunkLine:
            line.removeAll(keepingCapacity: true)
            let digits = text.prefix { $0.isHexDigit }
            guard let size = Int(digits, radix: 16) else { throw BenchError("a bad chunk-size line") }
            state = size == 0 ? .trailer : .chunkData(size)
        case .trailer:
            line.removeAll(keepingCapacity: true)
            if text == "\r\n" || text == "\n" {
                state = .head
                onEnd()
            }
        case .fixed, .chunkData, .chunkEnd:
            break
        }
    }
}
