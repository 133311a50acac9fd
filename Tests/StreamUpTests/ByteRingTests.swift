import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct ByteRingTests {
    /// Capacity is rounded up to a power of two so positions wrap with a mask.
    @Test func capacityRoundsUpToAPowerOfTwo() {
        #expect(ByteRing(minimumCapacity: 1).capacity == 1)
        #expect(ByteRing(minimumCapacity: 1000).capacity == 1024)
        #expect(ByteRing(minimumCapacity: 65536).capacity == 65536)
    }

    /// Free space and unread bytes come back as two spans when they wrap past the end.
    @Test func spansWrapAroundTheEndOfStorage() {
        var ring = ByteRing(minimumCapacity: 8)
        ring.commitWrite(6)
        ring.commitRead(5)
        // Given 1 unread byte at offset 5, free space is offsets 6..7 then 0..4.
        #expect(ring.writableSpans() == (.init(offset: 6, count: 2), .init(offset: 0, count: 5)))
        ring.commitWrite(4)
        #expect(ring.readableSpans() == (.init(offset: 5, count: 3), .init(offset: 0, count: 2)))
        #expect(ring.testOnly_invariantsHold())
    }

    /// Random writes and reads keep the counters consistent and never overfill.
    @Test func randomStepsKeepTheInvariants() {
        var ring = ByteRing(minimumCapacity: 64)
        var generator = SeededRandom()
        for _ in 0..<10_000 {
            if Bool.random(using: &generator) {
                ring.commitWrite(Int.random(in: 0...ring.writableCount, using: &generator))
            } else {
                ring.commitRead(Int.random(in: 0...ring.readableCount, using: &generator))
            }
            #expect(ring.testOnly_invariantsHold(), "\(generator)")
            let (first, second) = ring.writableSpans()
            #expect(first.count + second.count == ring.writableCount, "\(generator)")
        }
    }
}
