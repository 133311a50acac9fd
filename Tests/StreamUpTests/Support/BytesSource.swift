import Testing

@testable import StreamUp

/// An in-memory ``BodySource`` for tests: hands out `pieces` in order (a piece larger than the
/// reader's buffer over several reads), then ends or throws `failure`.
///
/// After each piece listed in `pausesAfter` has been read, the source pauses: non-blocking reads
/// answer `wouldBlock`, as a live source with nothing new would, until `resume()` or a blocking
/// read (which goes on as if the next bytes had arrived). `beforeRead` runs at the start of every read (tests move a manual
/// clock there), and `blockingReads` records the `blocking` flag of every read.
///
/// Thread safety: one reading thread at a time, like every body stage; not Sendable.
final class BytesSource: BodySource {
    private let pieces: [[UInt8]]
    private let pausesAfter: Set<Int>
    private let failure: (any Error)?
    private var piece = 0
    private var offset = 0
    private(set) var isPaused = false
    var beforeRead: (() -> Void)?
    private(set) var blockingReads: [Bool] = []

    init(pieces: [[UInt8]], pausesAfter: Set<Int> = [], failure: (any Error)? = nil) {
        self.pieces = pieces.filter { !$0.isEmpty }
        self.pausesAfter = pausesAfter
        self.failure = failure
    }

    /// A source whose every piece is followed by a pause.
    convenience init(pausingAfterEach pieces: [[UInt8]]) {
        self.init(pieces: pieces, pausesAfter: Set(pieces.indices))
    }

    /// Ends a pause: the next bytes are there.
    func resume() {
        isPaused = false
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        beforeRead?()
        blockingReads.append(blocking)
        if isPaused {
            if !blocking { return .wouldBlock }
            isPaused = false
        }
        guard piece < pieces.count else {
            if let failure { throw failure }
            return .end
        }
        let count = min(buffer.count, pieces[piece].count - offset)
        pieces[piece].withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
        }
        offset += count
        if offset == pieces[piece].count {
            isPaused = pausesAfter.contains(piece)
            piece += 1
            offset = 0
        }
        return .bytes(count)
    }
}

/// Reads a body stage to its end with blocking reads into buffers of `bufferSize` bytes.
func readAll(_ source: any BodySource, bufferSize: Int = 64 * 1024) throws -> [UInt8] {
    var body: [UInt8] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 1)
    defer { buffer.deallocate() }
    while true {
        switch try source.read(into: buffer, blocking: true) {
        case .bytes(let count): body.append(contentsOf: buffer.prefix(count))
        case .end: return body
        case .wouldBlock:
            Issue.record("a blocking read answered wouldBlock")
            return body
        }
    }
}

/// Reads what a body stage has without waiting: non-blocking reads until `wouldBlock` or the end.
func readAvailable(_ source: any BodySource, bufferSize: Int = 64 * 1024) throws -> (bytes: [UInt8], ended: Bool) {
    var body: [UInt8] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 1)
    defer { buffer.deallocate() }
    while true {
        switch try source.read(into: buffer, blocking: false) {
        case .bytes(let count): body.append(contentsOf: buffer.prefix(count))
        case .end: return (body, true)
        case .wouldBlock: return (body, false)
        }
    }
}
