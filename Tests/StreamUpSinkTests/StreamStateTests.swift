import Testing

@testable import StreamUpSink

/// The stream state machine alone: who joins, what joins, what is refused.
@Suite struct StreamStateTests {
    private static let roomy = StreamState.Limits(bytes: 1_000, pieces: 10)

    private static func piece(_ offset: Int, _ end: Int) -> StreamState.Piece {
        StreamState.Piece(offset: offset, end: end, path: "p\(offset)-\(end)")
    }

    /// A piece past the end is held without a join; the one that fills the gap claims the join,
    /// which takes both in order and then gives up its turn.
    @Test func theGapFillerJoinsEverythingContiguous() {
        var state = StreamState(length: 0, pieces: [])
        #expect(state.register(Self.piece(10, 20), limits: Self.roomy) == .held(join: false))
        #expect(state.register(Self.piece(0, 10), limits: Self.roomy) == .held(join: true))
        #expect(state.nextJoin() == .copy(Self.piece(0, 10), from: 0, stale: []))
        state.joined(Self.piece(0, 10))
        #expect(state.nextJoin() == .copy(Self.piece(10, 20), from: 10, stale: []))
        state.joined(Self.piece(10, 20))
        #expect(state.nextJoin() == .done(length: 20, stale: []))
        #expect(!state.joining && state.pieces.isEmpty)
    }

    /// While one connection joins, a joinable piece registered by another is left to it (no
    /// second joiner); a piece covered by one joined meanwhile is handed back as stale.
    @Test func oneJoinerAtATimeAndCoveredPiecesAreStale() {
        var state = StreamState(length: 0, pieces: [])
        #expect(state.register(Self.piece(0, 10), limits: Self.roomy) == .held(join: true))
        #expect(state.register(Self.piece(5, 8), limits: Self.roomy) == .held(join: false))
        #expect(state.register(Self.piece(5, 15), limits: Self.roomy) == .held(join: false))
        #expect(state.nextJoin() == .copy(Self.piece(0, 10), from: 0, stale: []))
        state.joined(Self.piece(0, 10))
        #expect(state.nextJoin() == .copy(Self.piece(5, 15), from: 10, stale: [Self.piece(5, 8)]))
        state.joined(Self.piece(5, 15))
        #expect(state.nextJoin() == .done(length: 15, stale: []))
        #expect(state.register(Self.piece(3, 12), limits: Self.roomy) == .duplicate(join: false))
    }

    /// The limits refuse only pieces past the end; a resend of a held piece is a duplicate (its
    /// own file goes); a failed join gives the turn back and the next registration claims it.
    @Test func limitsAndAFailedJoin() {
        let tight = StreamState.Limits(bytes: 10, pieces: 2)
        var state = StreamState(length: 0, pieces: [Self.piece(20, 28)])
        #expect(state.register(Self.piece(30, 33), limits: tight) == .full)
        #expect(state.register(Self.piece(30, 32), limits: tight) == .held(join: false))
        var resend = Self.piece(30, 32)
        resend.path = "a resend's own file"
        #expect(state.register(resend, limits: tight) == .duplicate(join: false))
        #expect(state.register(Self.piece(40, 41), limits: tight) == .full)
        #expect(state.register(Self.piece(0, 20), limits: tight) == .held(join: true))
        #expect(state.nextJoin() == .copy(Self.piece(0, 20), from: 0, stale: []))
        state.joinFailed()
        #expect(state.register(Self.piece(0, 20), limits: tight) == .duplicate(join: true))
    }
}
