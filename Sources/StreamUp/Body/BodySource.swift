/// One stage of a request body, pulled by the reader of the body (URLSession's thread).
/// `read` fills `buffer` with at least one byte, or says the body has ended, or — only when
/// `blocking` is false — that nothing is there yet. It throws when the body failed.
/// Thread safety: one reading thread at a time.
protocol BodySource: AnyObject {
    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead
}
