/// One de-duplicated stream's bookkeeping, as a pure state machine (no I/O): how long the stream
/// file is (its contiguous prefix), which bodies are held aside because they start past that end,
/// and whether a connection is joining held pieces into the file.
///
/// Pieces are kept sorted by offset. A body is first stored as a piece file, then
/// ``register(_:limits:sink:)`` decides what happens to it; whoever gets `.held(join: true)` joins
/// pieces with ``nextJoin(sink:)`` and ``joined(_:sink:)`` until ``nextJoin(sink:)`` says `.done`: only one
/// connection joins at a time, and a piece registered while it joins is picked up by it (or, if
/// the joiner has just finished, the registering connection becomes the joiner), so a piece that
/// can join never waits for a later request.
///
/// Thread safety: a value type; ``StreamStore/Entry`` keeps it behind the stream's state mutex.
struct StreamState {
    /// A body held aside: the stream's bytes `offset..<end`, in the file at `path` (its own:
    /// two pieces of the same bytes never share a file).
    struct Piece: Equatable {
        var offset: Int
        var end: Int
        var path: String

        var count: Int { end - offset }

        /// Whether `other` holds the same bytes of the stream.
        func covers(_ other: Piece) -> Bool {
            offset == other.offset && end == other.end
        }
    }

    /// The most a stream, and the whole sink over all its streams, may hold aside.
    struct Limits: Equatable {
        var bytes: Int
        var pieces: Int
        var sinkBytes: Int
        var sinkPieces: Int
    }

    /// What the whole sink holds aside, over every stream: each piece in a stream's ``pieces``
    /// counted once, from the moment it is registered (or found on disk at start) until it joins
    /// or is found stale. Kept by ``StreamStore`` behind its own mutex, taken inside a stream's
    /// state mutex.
    ///
    /// Thread safety: a value type.
    struct Totals: Equatable {
        var bytes = 0
        var pieces = 0

        mutating func add(_ piece: Piece) {
            bytes += piece.count
            pieces += 1
        }

        mutating func remove(_ piece: Piece) {
            bytes -= piece.count
            pieces -= 1
        }
    }

    /// Why a piece past the end was not held.
    enum Refusal: Equatable {
        /// The stream holds as much aside as it may.
        case streamFull
        /// The body alone is larger than a stream (or the sink) may hold aside: it can only be
        /// taken once the bytes before it have arrived.
        case tooLarge
        /// The sink holds as much aside as it may, over all its streams.
        case sinkFull
    }

    /// What to do with a piece just stored. With `join` set, the caller now joins pieces
    /// (``nextJoin(sink:)``): also after a duplicate, so pieces left by a failed join get another go.
    enum Registration: Equatable {
        /// Its bytes are all in the stream file already, or held in an identical piece: remove
        /// its file.
        case duplicate(join: Bool)
        /// Held.
        case held(join: Bool)
        /// Holding it would pass a limit: remove its file and refuse it.
        case refused(Refusal)
    }

    /// The joiner's next step.
    enum JoinStep: Equatable {
        /// Copy `piece` from stream offset `length` (its bytes before that are in the file) to
        /// the piece's end, then call ``joined(_:sink:)``; remove the files of `stale` (pieces whose
        /// bytes the file already holds).
        case copy(Piece, from: Int, stale: [Piece])
        /// Nothing joins now: the caller is no longer the joiner; remove the files of `stale`.
        case done(length: Int, stale: [Piece])
    }

    /// The stream file's length: bytes `0..<length` of the stream, contiguous.
    private(set) var length: Int
    /// Pieces held aside, sorted by offset (then end).
    private(set) var pieces: [Piece]
    /// Whether a connection is joining pieces into the file.
    private(set) var joining = false

    init(length: Int, pieces: [Piece]) {
        self.length = length
        self.pieces = pieces.sorted { ($0.offset, $0.end) < ($1.offset, $1.end) }
    }

    /// Bytes held aside (overlapping pieces count each time).
    var bytesAside: Int {
        pieces.reduce(0) { $0 + $1.count }
    }

    /// Decides about a piece whose file is stored under `piece.path`; `sink` is what the whole
    /// sink holds aside. Only a piece past the end can be refused: one the file can take now
    /// is held (and joined at once) whatever the limits, so the sender's oldest segment always
    /// gets through.
    mutating func register(_ piece: Piece, limits: Limits, sink: inout Totals) -> Registration {
        if piece.end <= length || pieces.contains(where: { $0.covers(piece) }) {
            return .duplicate(join: claimJoinIfUseful())
        }
        if piece.offset > length {
            if piece.count > min(limits.bytes, limits.sinkBytes) { return .refused(.tooLarge) }
            if pieces.count + 1 > limits.pieces || bytesAside + piece.count > limits.bytes { return .refused(.streamFull) }
            if sink.pieces + 1 > limits.sinkPieces || sink.bytes + piece.count > limits.sinkBytes { return .refused(.sinkFull) }
        }
        let index = pieces.firstIndex { ($0.offset, $0.end) > (piece.offset, piece.end) } ?? pieces.endIndex
        pieces.insert(piece, at: index)
        sink.add(piece)
        return .held(join: claimJoinIfUseful())
    }

    /// Whether a piece can join now and nobody joins: then the caller becomes the joiner.
    mutating func claimJoinIfUseful() -> Bool {
        guard !joining, let first = pieces.first, first.offset <= length else { return false }
        joining = true
        return true
    }

    /// The joiner's next step; `.done` ends its turn. Stale pieces leave `sink`.
    mutating func nextJoin(sink: inout Totals) -> JoinStep {
        precondition(joining, "nextJoin without the joiner's turn")
        var stale: [Piece] = []
        while let first = pieces.first, first.end <= length {
            stale.append(pieces.removeFirst())
            sink.remove(first)
        }
        if let first = pieces.first, first.offset <= length {
            return .copy(first, from: length, stale: stale)
        }
        joining = false
        return .done(length: length, stale: stale)
    }

    /// `piece` was copied into the file: the stream reaches its end, and the piece leaves
    /// `sink`.
    mutating func joined(_ piece: Piece, sink: inout Totals) {
        precondition(joining && piece.offset <= length, "joined \(piece) out of turn at \(length)")
        length = max(length, piece.end)
        if let index = pieces.firstIndex(of: piece) {
            pieces.remove(at: index)
            sink.remove(piece)
        }
    }

    /// Whether the stream holds nothing aside and nobody joins: its bookkeeping can be let go
    /// and made again from the file's length.
    var isIdle: Bool {
        pieces.isEmpty && !joining
    }

    /// Copying failed (the file was cut back to ``length``): the joiner gives up its turn; the
    /// pieces stay held for the next request of the stream.
    mutating func joinFailed() {
        joining = false
    }

    /// A live writer (a resumable upload bound to the stream) appended up to `end`.
    mutating func appended(upTo end: Int) {
        length = max(length, end)
    }
}
