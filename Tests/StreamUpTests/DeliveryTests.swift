import Foundation
import Testing
@testable import StreamUp

@Suite struct RetryPolicyTests {
    /// Connection failures, 408, 429 and 5xx are retried; other 4xx are final.
    @Test func classifiesFailures() {
        let policy = RetryPolicy()
        #expect(policy.isRetryable(status: 503) && policy.isRetryable(status: 500) && policy.isRetryable(status: 429) && policy.isRetryable(status: 408))
        #expect(!policy.isRetryable(status: 400) && !policy.isRetryable(status: 401) && !policy.isRetryable(status: 403) && !policy.isRetryable(status: 404))
        #expect(policy.isRetryable(StreamUpError(.transport, "refused")))
        #expect(!policy.isRetryable(StreamUpError(.cancelled, "cancelled")))
    }

    /// Retry-After wins; otherwise the bound doubles per attempt up to the cap (full jitter
    /// picks within it).
    @Test func delaysGrowAndHonourRetryAfter() {
        let policy = RetryPolicy()
        let upper: (Double) -> Double = { $0 }
        #expect(policy.delay(attempt: 1, retryAfter: "3", random: upper) == .seconds(3))
        #expect(policy.delay(attempt: 1, retryAfter: nil, random: upper) == .milliseconds(250))
        #expect(policy.delay(attempt: 3, retryAfter: nil, random: upper) == .milliseconds(1000))
        #expect(policy.delay(attempt: 30, retryAfter: nil, random: upper) == .seconds(30))
        #expect(policy.delay(attempt: 5, retryAfter: nil, random: { _ in 0 }) == .zero)
    }
}

@Suite struct ReplayBufferTests {
    /// Reads see bytes by absolute offset; an acknowledgement frees them; appends wait at the
    /// cap until an acknowledgement makes room.
    @Test func holdsUntilAcknowledgedAndPushesBackAtTheCap() async {
        let replay = ReplayBuffer(capacity: 8)
        #expect([UInt8](0..<8).withUnsafeBytes { replay.append($0) })
        var out = [UInt8](repeating: 0, count: 8)
        let result = out.withUnsafeMutableBytes { replay.read(from: 2, into: $0, deadline: nil) }
        #expect(result == .bytes(6) && Array(out.prefix(6)) == [2, 3, 4, 5, 6, 7])

        // Given a full buffer, the next append waits for an acknowledgement.
        let appended = Task.detached { [UInt8]([8, 9, 10]).withUnsafeBytes { replay.append($0) } }
        #expect(replay.heldCount == 8)
        replay.acknowledge(upTo: 4)
        #expect(await appended.value)
        #expect(replay.acknowledgedOffset == 4 && replay.endOffset == 11)
        let later = out.withUnsafeMutableBytes { replay.read(from: 8, into: $0, deadline: nil) }
        #expect(later == .bytes(3) && Array(out.prefix(3)) == [8, 9, 10])
        replay.markEnded()
        #expect(out.withUnsafeMutableBytes { replay.read(from: 11, into: $0, deadline: nil) } == .end)
        #expect(out.withUnsafeMutableBytes { replay.read(from: 11, into: $0, deadline: Date()) } == .end)
    }
}
