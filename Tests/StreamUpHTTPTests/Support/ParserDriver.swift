import StreamUpTestSupport

@testable import StreamUpHTTP

/// Feeds bytes to an ``HTTPRequestParser`` in pieces and collects whole messages, the way a
/// connection does (body ranges are copied out of each piece).
///
/// Thread safety: a value type that is never shared.
struct ParserDriver {
    struct Message: Equatable {
        var head: HTTPRequestHead
        var body: [UInt8]
        var trailers: [HTTPField]
    }

    struct Outcome: Equatable {
        var messages: [Message] = []
        var error: HTTPParseError?
        /// Body bytes of a message whose end had not arrived when the input ran out.
        var unfinishedBody: [UInt8]?
    }

    static let defaultLimits = HTTPRequestParser.Limits(maxHeaderBytes: 16_384, maxChunkLineBytes: 1_024)

    /// Parses `bytes` cut into pieces whose sizes come from `nextPieceSize`.
    static func parse(
        _ bytes: [UInt8],
        limits: HTTPRequestParser.Limits = defaultLimits,
        nextPieceSize: () -> Int
    ) -> Outcome {
        var parser = HTTPRequestParser(limits: limits)
        var outcome = Outcome()
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var offset = 0
        repeat {
            let size = max(0, min(nextPieceSize(), bytes.count - offset))
            let piece = Array(bytes[offset..<(offset + size)])
            offset += size
            let failed: HTTPParseError? = piece.withUnsafeBytes { raw in
                var start = 0
                while true {
                    let rest = UnsafeRawBufferPointer(rebasing: raw[start...])
                    let step: (event: HTTPRequestParser.Event, consumed: Int)
                    do throws(HTTPParseError) {
                        step = try parser.parse(rest)
                    } catch {
                        return error
                    }
                    precondition(step.consumed <= rest.count, "parser consumed more than it was given")
                    switch step.event {
                    case .needMoreData:
                        precondition(step.consumed == rest.count, "needMoreData must consume everything")
                        return nil
                    case .head(let parsed):
                        head = parsed
                        body = []
                    case .body(let range):
                        body.append(contentsOf: rest[range])
                    case .end(let trailers):
                        if let head {
                            outcome.messages.append(Message(head: head, body: body, trailers: trailers))
                        }
                        head = nil
                        body = []
                    }
                    start += step.consumed
                }
            }
            if let failed {
                outcome.error = failed
                return outcome
            }
        } while offset < bytes.count
        if head != nil {
            outcome.unfinishedBody = body
        }
        return outcome
    }

    /// Parses `text` as one piece.
    static func parseWhole(_ text: String, limits: HTTPRequestParser.Limits = defaultLimits) -> Outcome {
        let bytes = Array(text.utf8)
        return parse(bytes, limits: limits) { bytes.count }
    }

    /// Parses `bytes` one byte at a time.
    static func parseByteByByte(_ bytes: [UInt8], limits: HTTPRequestParser.Limits = defaultLimits) -> Outcome {
        parse(bytes, limits: limits) { 1 }
    }

    /// Parses `bytes` in random pieces of 1…`maxPiece` bytes.
    static func parseInRandomPieces(
        _ bytes: [UInt8], seed: UInt64, maxPiece: Int = 64,
        limits: HTTPRequestParser.Limits = defaultLimits
    ) -> Outcome {
        var random = SeededRandom(seed: seed)
        return parse(bytes, limits: limits) { Int.random(in: 1...maxPiece, using: &random) }
    }
}
