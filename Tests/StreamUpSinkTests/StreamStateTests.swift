import Testing

@testable import StreamUpSink

/// The stream state machine alone: who joins, what joins, what is refused.
@Suite struct StreamStateTests {
    private static let roomy = StreamState.Limits(bytes: 1_000, pieces: 10, sinkBytes: 10_000, sinkPieces: 100)

    private static func piece(_ offset: Int, _ end: Int) -> StreamState.Piece {
        StreamState.Piece(offset: offset, end: end, path: "p\(offset)-\(end)")
    }

    /// A piece past the end is held without a join; the one that fills the gap claims the join,
    /// which takes both in order and then gives up its turn.
    @Test func theGapFillerJoinsEverythingContiguous() {
        var sink = StreamState.Totals()
        var state = StreamState(length: 0, pieces: [])
        #expect(state.register(Self.piece(10, 20), limits: Self.roomy, sink: &sink) == .held(join: false))
        #expect(state.register(Self.piece(0, 10), limits: Self.roomy, sink: &sink) == .held(join: true))
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(0, 10), from: 0, stale: []))
        state.joined(Self.piece(0, 10), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(10, 20), from: 10, stale: []))
        state.joined(Self.piece(10, 20), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .done(length: 20, stale: []))
        #expect(!state.joining && state.pieces.isEmpty)
    }

    /// While one connection joins, a joinable piece registered by another is left to it (no
    /// second joiner); a piece covered by one joined meanwhile is handed back as stale.
    @Test func oneJoinerAtATimeAndCoveredPiecesAreStale() {
        var sink = StreamState.Totals()
        var state = StreamState(length: 0, pieces: [])
        #expect(state.register(Self.piece(0, 10), limits: Self.roomy, sink: &sink) == .held(join: true))
        #expect(state.register(Self.piece(5, 8), limits: Self.roomy, sink: &sink) == .held(join: false))
        #expect(state.register(Self.piece(5, 15), limits: Self.roomy, sink: &sink) == .held(join: false))
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(0, 10), from: 0, stale: []))
        state.joined(Self.piece(0, 10), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(5, 15), from: 10, stale: [Self.piece(5, 8)]))
        state.joined(Self.piece(5, 15), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .done(length: 15, stale: []))
        #expect(state.register(Self.piece(3, 12), limits: Self.roomy, sink: &sink) == .duplicate(join: false))
    }

    /// The limits refuse only pieces past the end; a resend of a held piece is a duplicate (its
    /// own file goes); a failed join gives the turn back and the next registration claims it.
    @Test func limitsAndAFailedJoin() {
        let tight = StreamState.Limits(bytes: 10, pieces: 2, sinkBytes: 100, sinkPieces: 100)
        var sink = StreamState.Totals(bytes: 8, pieces: 1)
        var state = StreamState(length: 0, pieces: [Self.piece(20, 28)])
        #expect(state.register(Self.piece(30, 33), limits: tight, sink: &sink) == .refused(.streamFull))
        #expect(state.register(Self.piece(30, 32), limits: tight, sink: &sink) == .held(join: false))
        var resend = Self.piece(30, 32)
        resend.path = "a resend's own file"
        #expect(state.register(resend, limits: tight, sink: &sink) == .duplicate(join: false))
        #expect(state.register(Self.piece(40, 41), limits: tight, sink: &sink) == .refused(.streamFull))
        #expect(state.register(Self.piece(0, 20), limits: tight, sink: &sink) == .held(join: true))
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(0, 20), from: 0, stale: []))
        state.joinFailed()
        #expect(state.register(Self.piece(0, 20), limits: tight, sink: &sink) == .duplicate(join: true))
    }

    /// A body past the end larger than a stream may hold aside is refused as too large (not as
    /// a full stream: the stream may hold nothing); past the sink's totals a stream with room
    /// is refused for the sink; a piece the file can take passes every limit; pieces that join
    /// or go stale leave the totals.
    @Test func theSinksTotalsBoundEveryStreamAndPiecesLeaveThemWhenJoined() {
        let limits = StreamState.Limits(bytes: 100, pieces: 10, sinkBytes: 30, sinkPieces: 3)
        var sink = StreamState.Totals(bytes: 25, pieces: 2)
        var state = StreamState(length: 0, pieces: [])
        #expect(state.register(Self.piece(10, 111), limits: limits, sink: &sink) == .refused(.tooLarge))
        #expect(state.register(Self.piece(10, 50), limits: limits, sink: &sink) == .refused(.tooLarge))
        #expect(state.register(Self.piece(10, 16), limits: limits, sink: &sink) == .refused(.sinkFull))
        #expect(state.register(Self.piece(10, 15), limits: limits, sink: &sink) == .held(join: false))
        #expect(sink == StreamState.Totals(bytes: 30, pieces: 3))
        #expect(state.register(Self.piece(20, 21), limits: limits, sink: &sink) == .refused(.sinkFull))
        // The bytes the file can take next pass, though they are over every limit.
        #expect(state.register(Self.piece(0, 12), limits: limits, sink: &sink) == .held(join: true))
        #expect(sink == StreamState.Totals(bytes: 42, pieces: 4))
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(0, 12), from: 0, stale: []))
        state.joined(Self.piece(0, 12), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .copy(Self.piece(10, 15), from: 12, stale: []))
        state.joined(Self.piece(10, 15), sink: &sink)
        #expect(state.nextJoin(sink: &sink) == .done(length: 15, stale: []))
        #expect(sink == StreamState.Totals(bytes: 25, pieces: 2) && state.isIdle)
    }
}
