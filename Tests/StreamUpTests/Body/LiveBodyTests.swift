import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The body of one live request: a stream over the uploader's `ReplayBuffer`, as URLSession
/// reads it (`LiveBody`, `ReplayBuffer.readLive`). Bytes are released as they are read, the
/// reader waits for the writer instead of reporting the end, a failure wakes it, and a full
/// buffer holds the writer until a good part of it is free.
@Suite struct LiveBodyTests {
    /// A live buffer of `capacity` bytes, its writer, and the stream URLSession would get.
    private func live(capacity: Int) -> (ReplayBuffer, StreamWriter, LiveBody, StreamReference<InputStream>) {
        let buffer = ReplayBuffer.live(capacity: capacity)
        let writer = StreamWriter(buffer: buffer)
        let body = LiveBody(buffer, encoding: BodyEncoding())
        let stream = body.stream(forAttempt: 1)!
        stream.open()
        return (buffer, writer, body, StreamReference(stream))
    }

    /// Reads once on a thread of its own (a blocking read must not hold a cooperative thread).
    private func readOnce(_ stream: StreamReference<InputStream>, maxLength: Int) async -> (Int, [UInt8]) {
        await withCheckedContinuation { done in
            Thread.detachNewThread {
                var bytes = [UInt8](repeating: 0, count: maxLength)
                let count = stream.value.read(&bytes, maxLength: maxLength)
                done.resume(returning: (count, Array(bytes.prefix(max(count, 0)))))
            }
        }
    }

    /// 16 MiB (1 GiB with `STREAMUP_TEST_LONG=1`) cross a 64 KiB live buffer from a writer to
    /// a reader, in random write and read sizes that wrap around the buffer at every offset,
    /// and arrive byte for byte; every byte read is released.
    @Test func bytesArriveIntactThroughRandomSizedWritesAndReads() async throws {
        let total = ProcessInfo.processInfo.environment["STREAMUP_TEST_LONG"] == "1" ? 1 << 30 : 16 << 20
        var random = SeededRandom()
        let seed = random.seed
        let pattern = random.bytes((1 << 20) + 7)
        let (buffer, writer, body, stream) = live(capacity: 64 * 1024)
        let producing = Task.detached {
            var sizes = SeededRandom(seed: seed &+ 1)
            var sent = 0
            while sent < total {
                let offset = sent % pattern.count
                let size = min(Int.random(in: 1...100_000, using: &sizes), pattern.count - offset, total - sent)
                try await writer.write(Array(pattern[offset..<offset + size]))
                sent += size
            }
            writer.finish()
        }
        let (received, mismatches) = await withCheckedContinuation { (done: CheckedContinuation<(Int, Int), Never>) in
            Thread.detachNewThread {
                var sizes = SeededRandom(seed: seed &+ 2)
                var received = 0
                var mismatches = 0
                var chunk = [UInt8](repeating: 0, count: 200_000)
                while true {
                    let count = stream.value.read(&chunk, maxLength: Int.random(in: 1...200_000, using: &sizes))
                    precondition(count >= 0)
                    if count == 0 { break }
                    for index in 0..<count where chunk[index] != pattern[(received + index) % pattern.count] {
                        mismatches += 1
                        break
                    }
                    received += count
                }
                done.resume(returning: (received, mismatches))
            }
        }
        try await producing.value
        #expect(received == total, "\(random)")
        #expect(mismatches == 0, "\(mismatches) reads differed from what was written; \(random)")
        #expect(body.bytesSent == total && buffer.heldCount == 0)
        #expect(stream.value.streamStatus == .atEnd)
    }

    /// An idle body keeps `hasBytesAvailable` true (URLSession takes false as the end of the
    /// body), and `read` waits until a byte is written; the byte is released once read.
    @Test func readWaitsForTheWriterInsteadOfReportingTheEnd() async throws {
        let (buffer, writer, body, stream) = live(capacity: 64)
        #expect(stream.value.hasBytesAvailable)
        async let result = readOnce(stream, maxLength: 8)
        // Given: the reader sleeps in `read` (nothing was written, the writer is open).
        try #require(await eventually { buffer.withState { $0.liveReaderWaits } })
        try await writer.write([42])
        #expect(await result == (1, [42]))
        #expect(body.bytesSent == 1 && buffer.heldCount == 0)
    }

    /// Finishing hands the reader what is buffered, then the end.
    @Test func finishDeliversTheRestThenTheEnd() async throws {
        let (_, writer, _, stream) = live(capacity: 64)
        try await writer.write(Array("abc".utf8))
        writer.finish()
        #expect(await readOnce(stream, maxLength: 8) == (3, Array("abc".utf8)))
        #expect(await readOnce(stream, maxLength: 8) == (0, []))
        #expect(!stream.value.hasBytesAvailable && stream.value.streamStatus == .atEnd)
    }

    /// A failure on the writing side (a cancel, the producer's failure) wakes a waiting read,
    /// which returns -1 with that error; later writes fail.
    @Test func writerFailureWakesAndFailsTheReader() async throws {
        let (buffer, writer, body, stream) = live(capacity: 64)
        async let result = readOnce(stream, maxLength: 8)
        try #require(await eventually { buffer.withState { $0.liveReaderWaits } })
        writer.fail(StreamUpError(.cancelled, "test cancelled"))
        #expect(await result == (-1, []))
        #expect((stream.value.streamError as? StreamUpError)?.code == .cancelled)
        #expect(body.failure?.code == .cancelled)
        await #expect(throws: StreamUpError.self) { try await writer.write([1]) }
    }

    /// The request's end (the server answered) makes a writer's next write fail.
    @Test func theRequestsEndFailsTheWriter() async throws {
        let (_, writer, body, _) = live(capacity: 64)
        body.close()
        let error = await #expect(throws: StreamUpError.self) { try await writer.write([1]) }
        #expect(error?.code == .bodyStreamClosed)
    }

    /// A full buffer holds the writer until a quarter of it is free, so that one wake-up
    /// refills a good part of it, not a byte at a time.
    @Test func aFullBufferWakesTheWriterOnceAQuarterIsFree() async throws {
        let (buffer, writer, _, stream) = live(capacity: 64)
        try await writer.write([UInt8](repeating: 1, count: 64))
        let waiting = Task { try await writer.write([2]) }
        try #require(await eventually { buffer.withState { !$0.writers.entries.isEmpty } })
        // 8 bytes free: less than a quarter, the writer is not woken.
        #expect(await readOnce(stream, maxLength: 8).0 == 8)
        #expect(buffer.withState { !$0.writers.entries.isEmpty } && buffer.writtenOffset == 64)
        // 16 free: it is, and writes.
        #expect(await readOnce(stream, maxLength: 8).0 == 8)
        try await waiting.value
        #expect(buffer.writtenOffset == 65)
    }

    /// Held bytes that wrap around the ring's end come out in one read: each read is a libcurl
    /// callback of fixed cost, so a read cut at the ring's end would cost a whole extra one.
    @Test func oneReadTakesTheHeldBytesAcrossTheRingsEnd() async throws {
        let (buffer, writer, _, stream) = live(capacity: 64)
        try await writer.write([UInt8](repeating: 1, count: 48))
        #expect(await readOnce(stream, maxLength: 48).0 == 48)
        // 16 bytes before the ring's end, 16 after it.
        let wrapped = (0..<32).map { UInt8($0) }
        try await writer.write(wrapped)
        #expect(await readOnce(stream, maxLength: 64) == (32, wrapped))
        #expect(buffer.heldCount == 0)
    }

    /// URLSession asking for the body again after bytes were taken fails the body: a live
    /// stream cannot be re-sent. Before any byte was taken, the same stream serves.
    @Test func aSecondRequestForTheBodyAfterBytesWereSentFails() async throws {
        let (_, writer, body, stream) = live(capacity: 64)
        #expect(body.stream(forAttempt: 2) === stream.value)
        try await writer.write(Array("x".utf8))
        #expect(await readOnce(stream, maxLength: 8).0 == 1)
        #expect(body.stream(forAttempt: 3) == nil)
        #expect(body.failure?.code == .bodyNotRewindable)
    }
}
