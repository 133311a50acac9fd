import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct GzipStageTests {
    private struct LowerFailed: Error {}

    private func stage(_ source: BytesSource, clock: ManualClock = ManualClock()) throws -> GzipStage<ManualClock> {
        try GzipStage(over: source, clock: clock)
    }

    /// A body read in one go is one complete gzip member holding the input, whatever the size of
    /// the reader's buffer; Python and gzip -dc decode it byte-exact.
    @Test(arguments: [1, 7, 100, 65536])
    func wholeBodyIsOneMemberForAnyReadSize(bufferSize: Int) throws {
        let input = LogLines.text(count: 20_000)
        let body = try readAll(stage(BytesSource(pieces: [input])), bufferSize: bufferSize)
        try GzipCheck.expectOneMember(body, holding: input)
    }

    /// Input that arrives in many small pieces with pauses between, read with a mix of blocking
    /// and non-blocking reads of random sizes, is still one member that decodes byte-exact.
    @Test(arguments: [UInt64(1), 2, 3])
    func manySmallWritesDecodeByteExact(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let input = LogLines.text(count: 3000, seed: seed)
        let pieces = random.split(input, maximum: 300)
        let pauses = Set(pieces.indices.filter { _ in Int.random(in: 0..<4, using: &random) == 0 })
        let gzip = try stage(BytesSource(pieces: pieces, pausesAfter: pauses))

        var body: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        reading: while true {
            let size = Int.random(in: 1...buffer.count, using: &random)
            let blocking = Bool.random(using: &random)
            let read = try buffer.withUnsafeMutableBytes {
                try gzip.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<size]), blocking: blocking)
            }
            switch read {
            case .bytes(let count): body += buffer.prefix(count)
            case .end: break reading
            case .wouldBlock: #expect(!blocking)
            }
        }
        try GzipCheck.expectOneMember(body, holding: input)
    }

    /// When the lower stage has nothing more for now, what was taken is sync-flushed: Python's
    /// streaming decoder yields every line written so far from the body's prefix.
    @Test func pauseInTheLowerStageMakesThePrefixDecodable() throws {
        let lines = LogLines.make(count: 300).map { $0 + [0x0A] }
        // Given lines arriving in three bursts,
        let source = BytesSource(
            pieces: [lines[..<100].flatMap { $0 }, lines[100..<250].flatMap { $0 }, lines[250...].flatMap { $0 }],
            pausesAfter: [0, 1])
        let gzip = try stage(source)

        // when the reader takes what is there after each burst,
        let first = try readAvailable(gzip)
        source.resume()
        let second = try readAvailable(gzip)
        source.resume()
        // then each prefix decodes to exactly the lines of the bursts so far.
        #expect(!first.ended && !second.ended)
        let firstDecoded = try GzipCheck.pythonStream(first.bytes)
        #expect(firstDecoded.bytes == lines[..<100].flatMap { $0 })
        #expect(!firstDecoded.memberEnded)
        let bothDecoded = try GzipCheck.pythonStream(first.bytes + second.bytes)
        #expect(bothDecoded.bytes == lines[..<250].flatMap { $0 })

        let rest = try readAll(gzip)
        try GzipCheck.expectOneMember(first.bytes + second.bytes + rest, holding: lines.flatMap { $0 })
    }

    /// A blocking read does not wait in the lower stage while it holds unflushed input: it
    /// flushes and returns the line it has, although the lower stage would go on to give the
    /// next one if asked to block.
    @Test func blockingReadFlushesInsteadOfWaitingForMore() throws {
        let lines = ["zero\n", "first line\n", "second line\n"].map { Array($0.utf8) }
        let source = BytesSource(pieces: lines, pausesAfter: [0, 1])
        let gzip = try stage(source)
        // Given the gzip header and the first line already out,
        let start = try readAvailable(gzip)
        source.resume()
        let readsBefore = source.blockingReads.count

        // when the reader makes a blocking read,
        var buffer = [UInt8](repeating: 0, count: 65536)
        let read = try buffer.withUnsafeMutableBytes { try gzip.read(into: $0, blocking: true) }
        guard case .bytes(let count) = read else {
            Issue.record("expected bytes, got \(read)")
            return
        }
        // then it gets the next line, flushed, and the lower stage was asked without blocking
        // once that line was taken.
        #expect(try GzipCheck.pythonStream(start.bytes + buffer.prefix(count)).bytes == lines[0] + lines[1])
        #expect(Array(source.blockingReads[readsBefore...]) == [true, false])
    }

    /// With nothing unflushed and nothing new below, a non-blocking read says so.
    @Test func nonBlockingReadWithNothingNewSaysWouldBlock() throws {
        let source = BytesSource(pieces: [Array("one\n".utf8), Array("two\n".utf8)], pausesAfter: [0])
        let gzip = try stage(source)
        let first = try readAvailable(gzip)
        #expect(!first.bytes.isEmpty && !first.ended)
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(try buffer.withUnsafeMutableBytes { try gzip.read(into: $0, blocking: false) } == .wouldBlock)
        source.resume()
        let rest = try readAll(gzip)
        try GzipCheck.expectOneMember(first.bytes + rest, holding: Array("one\ntwo\n".utf8))
    }

    /// Input that keeps arriving without a pause is flushed once it has waited `flushDelay`.
    @Test func steadyInputIsFlushedAfterTheDelay() throws {
        let lines = LogLines.make(count: 1000).map { $0 + [0x0A] }
        let clock = ManualClock()
        // Given a lower stage that never pauses and takes 10 ms (on the manual clock) per line,
        let source = BytesSource(pieces: lines)
        source.beforeRead = { clock.advance(by: .milliseconds(10)) }
        let gzip = try GzipStage(over: source, flushDelay: .milliseconds(250), clock: clock)

        // when the reader makes one read with a roomy buffer,
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let read = try buffer.withUnsafeMutableBytes { try gzip.read(into: $0, blocking: true) }
        guard case .bytes(let count) = read else {
            Issue.record("expected bytes, got \(read)")
            return
        }
        // then it returns a sync-flushed prefix holding the lines of about 250 ms: 25 lines,
        // give or take the line being read when the delay ran out.
        let prefix = Array(buffer.prefix(count))
        #expect(prefix.suffix(4) == [0x00, 0x00, 0xFF, 0xFF])
        let decoded = try GzipCheck.pythonStream(prefix).bytes
        let lineCount = decoded.split(separator: 0x0A, omittingEmptySubsequences: false).count - 1
        #expect((24...27).contains(lineCount))
        #expect(decoded == lines.prefix(lineCount).flatMap { $0 })
    }

    /// Without pauses or time passing, no flush happens at all (not one per line): the body is
    /// byte for byte what one-shot compression of the whole input gives.
    @Test func steadyInputWithinTheDelayIsNotFlushedPerLine() throws {
        let lines = LogLines.make(count: 2000).map { $0 + [0x0A] }
        let body = try readAll(stage(BytesSource(pieces: lines)))

        let input = lines.flatMap { $0 }
        let encoder = try GzipEncoder()
        var oneShot = [UInt8](repeating: 0, count: input.count + 1024)
        let step = input.withUnsafeBytes { bytes in
            oneShot.withUnsafeMutableBytes { encoder.encode(input: bytes, into: $0, flush: .finish) }
        }
        #expect(encoder.isFinished)
        let same = body == Array(oneShot.prefix(step.produced))
        #expect(same, "the body has \(body.count) bytes, one-shot compression \(step.produced)")
    }

    /// An empty lower stage gives an empty but complete gzip member.
    @Test func emptyInputIsAnEmptyMember() throws {
        let body = try readAll(stage(BytesSource(pieces: [])))
        try GzipCheck.expectOneMember(body, holding: [])
    }

    /// A failure of the lower stage reaches the reader.
    @Test func lowerFailureIsThrown() throws {
        let gzip = try stage(BytesSource(pieces: [Array("partial\n".utf8)], failure: LowerFailed()))
        #expect(throws: LowerFailed.self) { _ = try readAll(gzip) }
    }
}
