// Driving the parser over whole reads, for receivers that only want heads, body bytes and ends.
extension HTTPRequestParser {
    /// Parses all of `input` following the parser's calling convention, calling `onHead` for
    /// each head, `onBody` for each run of body bytes (a range of `input`, not copied) and
    /// `onEnd` with the trailers when a request ends. Pipelined requests are parsed in turn.
    ///
    /// - Throws: the parse error; the parser stays failed (see ``parse(_:)``).
    package mutating func feed(
        _ input: UnsafeRawBufferPointer,
        onHead: (HTTPRequestHead) -> Void,
        onBody: (UnsafeRawBufferPointer) -> Void,
        onEnd: ([HTTPField]) -> Void
    ) throws(HTTPParseError) {
        var offset = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
            let step = try parse(rest)
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                return
            case .head(let head):
                onHead(head)
            case .body(let range):
                onBody(UnsafeRawBufferPointer(rebasing: rest[range]))
            case .end(let trailers):
                onEnd(trailers)
            }
        }
    }
}
