import Foundation

/// An incremental decoder for HTTP/1.1 requests on one connection, just enough for the bench's
/// own receivers: it finds the end of each head, notes `Expect: 100-continue`, hands out body
/// bytes (chunked or `Content-Length`) as they arrive, in place, without copying, and then
/// expects the next request on the same connection.
///
/// Thread safety: a value type confined to its connection's thread.
struct RequestDecoder {
    private enum State {
        case head
        case sizeLine
        case data(remaining: Int)
        case dataEnd(remaining: Int)
        case trailers
        case fixed(remaining: Int)
    }

    private var state = State.head
    private var line: [UInt8] = []
    private static let maxLine = 64 * 1024

    /// True from a request's first byte until its end.
    var inRequest: Bool {
        if case .head = state { return !line.isEmpty }
        return true
    }

    /// Feeds received bytes. `onHead` gets whether the client waits for `100 Continue`;
    /// `onBody` gets each run of body bytes; `onEnd` is called when a request has ended.
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer, onHead: (_ expectsContinue: Bool) -> Void,
        onBody: (UnsafeRawBufferPointer) -> Void, onEnd: () -> Void
    ) throws(BenchError) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .head:
                line.append(bytes[index])
                index += 1
                if line.count >= 4 && line.suffix(4).elementsEqual([13, 10, 13, 10]) {
                    let framing = try Self.framing(of: line)
                    line.removeAll(keepingCapacity: true)
                    onHead(framing.expectsContinue)
                    if framing.chunked {
                        state = .sizeLine
                    } else if framing.length > 0 {
                        state = .fixed(remaining: framing.length)
                    } else {
                        onEnd()
                    }
                } else if line.count > Self.maxLine {
                    throw BenchError("request head over 64 KiB")
                }
            case .sizeLine, .trailers:
                let byte = bytes[index]
                index += 1
                guard byte == UInt8(ascii: "\n") else {
                    line.append(byte)
                    guard line.count <= Self.maxLine else { throw BenchError("chunk line over 64 KiB") }
                    continue
                }
                if line.last == 13 { line.removeLast() }
                if case .trailers = state {
                    if line.isEmpty {
                        state = .head
                        onEnd()
                    }
                } else {
                    let text = String(decoding: line.prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
                    guard let size = Int(text.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                        throw BenchError("bad chunk size line '\(text.prefix(40))'")
                    }
                    state = size == 0 ? .trailers : .data(remaining: size)
                }
                line.removeAll(keepingCapacity: true)
            case .data(let remaining):
                let count = min(remaining, bytes.count - index)
                onBody(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + count)]))
                index += count
                state = remaining == count ? .dataEnd(remaining: 2) : .data(remaining: remaining - count)
            case .dataEnd(let remaining):
                index += 1
                state = remaining == 1 ? .sizeLine : .dataEnd(remaining: remaining - 1)
            case .fixed(let remaining):
                let count = min(remaining, bytes.count - index)
                onBody(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + count)]))
                index += count
                if remaining == count {
                    state = .head
                    onEnd()
                } else {
                    state = .fixed(remaining: remaining - count)
                }
            }
        }
    }

    /// How a head frames its body: chunked, a `Content-Length`, or none.
    private static func framing(of head: [UInt8]) throws(BenchError) -> (chunked: Bool, length: Int, expectsContinue: Bool) {
        var chunked = false
        var length = 0
        var expectsContinue = false
        let text = String(decoding: head, as: UTF8.self)
        for field in text.split(separator: "\r\n").dropFirst() {
            guard let colon = field.firstIndex(of: ":") else { continue }
            let name = field[..<colon].lowercased()
            let value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces).lowercased()
            switch name {
            case "transfer-encoding": chunked = value.contains("chunked")
            case "content-length":
                guard let parsed = Int(value), parsed >= 0 else { throw BenchError("bad Content-Length '\(value.prefix(40))'") }
                length = parsed
            case "expect": expectsContinue = value == "100-continue"
            default: break
            }
        }
        return (chunked, length, expectsContinue)
    }
}
