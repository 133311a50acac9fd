import Foundation

/// An incremental decoder for one HTTP/1.1 request with a chunked body, just enough for the
/// bench's own receiver: it finds the end of the head, notes `Expect: 100-continue`, and hands
/// out body bytes as they arrive, in place, without copying.
///
/// Thread safety: a value type confined to the receiver's thread.
struct ChunkedRequestDecoder {
    private enum State {
        case head
        case sizeLine
        case data(remaining: Int)
        case dataEnd(remaining: Int)
        case trailers
        case done
    }

    private var state = State.head
    private var line: [UInt8] = []
    private static let maxLine = 64 * 1024

    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Feeds received bytes. `onHead` gets whether the client waits for `100 Continue`;
    /// `onBody` gets each run of body bytes. Returns true once the last chunk and trailers are in.
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer, onHead: (_ expectsContinue: Bool) -> Void, onBody: (UnsafeRawBufferPointer) -> Void
    ) throws(BenchError) -> Bool {
        var index = 0
        while index < bytes.count {
            switch state {
            case .head:
                line.append(bytes[index])
                index += 1
                if line.count >= 4 && line.suffix(4).elementsEqual([13, 10, 13, 10]) {
                    let head = String(decoding: line, as: UTF8.self).lowercased()
                    guard head.contains("transfer-encoding: chunked") else {
                        throw BenchError("the client did not send a chunked body; head: \(head.prefix(300))")
                    }
                    onHead(head.contains("expect: 100-continue"))
                    line.removeAll(keepingCapacity: true)
                    state = .sizeLine
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
                    if line.isEmpty { state = .done }
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
            case .done:
                throw BenchError("bytes after the end of the request")
            }
        }
        return isDone
    }
}
