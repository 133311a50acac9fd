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

@Suite struct SpoolStorageTests {
    private func temporarySpool() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("streamup-spool-\(UUID().uuidString)").path
    }

    private func append(_ bytes: [UInt8], to replay: ReplayBuffer) {
        _ = bytes.withUnsafeBytes { replay.append($0) }
    }

    private func read(_ replay: ReplayBuffer, from offset: Int, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while out.count < count {
            guard case .bytes(let got) = buffer.withUnsafeMutableBytes({ replay.read(from: offset + out.count, into: $0, deadline: Date()) }) else { break }
            out += buffer.prefix(got)
        }
        return out
    }

    /// What was not acknowledged survives the process: a second open finds it, under the same
    /// stream id and offsets, across several spool files.
    @Test func pendingBytesSurviveAReopen() throws {
        let directory = temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "first")
            #expect(spool.recovered.start == 0 && spool.recovered.end == 0)
            let replay = ReplayBuffer(storage: spool)
            append(Array(0..<30), to: replay)
            replay.acknowledge(upTo: 12)
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "second")
        #expect(spool.recovered.start == 12 && spool.recovered.end == 30 && spool.record.streamID == "first")
        let replay = ReplayBuffer(storage: spool, start: spool.recovered.start, end: spool.recovered.end)
        #expect(read(replay, from: 12, count: 18) == Array(12..<30))
        // Files wholly acknowledged are deleted (capacity 40 → files of 10 bytes).
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".spool") }.sorted()
        #expect(files == ["00000000000000000010.spool", "00000000000000000020.spool"])
    }

    /// A spool whose bytes were all acknowledged starts a new stream at offset 0.
    @Test func anEmptiedSpoolStartsANewStream() throws {
        let directory = temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let replay = ReplayBuffer(storage: try SpoolStorage.open(directory: directory, capacity: 16, streamID: "first"))
            append([1, 2, 3], to: replay)
            replay.acknowledge(upTo: 3)
        }
        let spool = try SpoolStorage.open(directory: directory, capacity: 16, streamID: "second")
        #expect(spool.recovered.start == 0 && spool.recovered.end == 0 && spool.record.streamID == "second")
    }

    /// Two processes cannot share a spool; a spool with bytes missing in the middle is refused
    /// with a message, not silently skipped.
    @Test func refusesASharedOrDamagedSpool() throws {
        let directory = temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s")
            #expect(throws: StreamUpError.self) { try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s") }
            append(Array(0..<30), to: ReplayBuffer(storage: spool))
        }
        try FileManager.default.removeItem(atPath: "\(directory)/00000000000000000010.spool")
        let error = #expect(throws: StreamUpError.self) { try SpoolStorage.open(directory: directory, capacity: 40, streamID: "s") }
        #expect(error?.description.contains("missing") == true)
    }
}
