import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct BoundStreamPairTests {
    /// Opens both ends of a fresh pair.
    private func openPair(bufferSize: Int) -> BoundStreamPair {
        let pair = BoundStreamPair(bufferSize: bufferSize)
        pair.input.open()
        pair.output.open()
        return pair
    }

    /// 64 MiB (1 GiB with `STREAMUP_TEST_LONG=1`, for a long soak by hand) crosses a 64 KiB
    /// pair between two threads, in random write and read sizes that wrap around the buffer at
    /// every offset, and arrives byte for byte.
    @Test func bytesArriveIntactThroughRandomSizedWritesAndReads() async throws {
        let total = ProcessInfo.processInfo.environment["STREAMUP_TEST_LONG"] == "1" ? 1 << 30 : 64 << 20
        // A pattern block whose length is no multiple of the capacity, so wraps land everywhere.
        var random = SeededRandom()  // the pattern; the writer and the reader take seeds after it
        let seed = random.seed
        let pattern = random.bytes((1 << 20) + 7)
        let pair = BoundStreamPair(bufferSize: 64 * 1024)
        let space = StreamEventRecorder()
        let queue = DispatchQueue(label: "writer-events")
        pair.output.delegate = space
        pair.output.setDispatchQueue(queue)
        pair.input.open()
        pair.output.open()
        let output = StreamReference(pair.output)
        let input = StreamReference(pair.input)

        let writer = Thread {
            var sizes = SeededRandom(seed: seed &+ 1)
            var sent = 0
            var spaceEvents = 1
            pattern.withUnsafeBufferPointer { block in
                while sent < total {
                    let offset = sent % block.count
                    let size = min(Int.random(in: 1...100_000, using: &sizes), block.count - offset, total - sent)
                    let written = output.value.write(block.baseAddress! + offset, maxLength: size)
                    precondition(written >= 0)
                    if written == 0 {
                        // Full: wait for the event the reader's draining causes.
                        spaceEvents += 1
                        _ = space.waitFor(.hasSpaceAvailable, count: spaceEvents)
                    }
                    sent += written
                }
            }
            output.value.close()
        }
        writer.start()

        // The reader runs on a thread of its own too: its blocking reads must not hold one of the
        // few cooperative threads that the tests running beside this one need.
        let (received, mismatches) = await withCheckedContinuation { (done: CheckedContinuation<(Int, Int), Never>) in
            Thread.detachNewThread {
                var sizes = SeededRandom(seed: seed &+ 2)
                var received = 0
                var mismatches = 0
                let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 200_000)
                defer { buffer.deallocate() }
                pattern.withUnsafeBufferPointer { block in
                    while true {
                        let count = input.value.read(buffer, maxLength: Int.random(in: 1...200_000, using: &sizes))
                        precondition(count >= 0)
                        if count == 0 { break }
                        var checked = 0
                        while checked < count {
                            let offset = (received + checked) % block.count
                            let run = min(count - checked, block.count - offset)
                            if memcmp(buffer + checked, block.baseAddress! + offset, run) != 0 { mismatches += 1 }
                            checked += run
                        }
                        received += count
                    }
                }
                done.resume(returning: (received, mismatches))
            }
        }
        #expect(received == total, "\(random)")
        #expect(mismatches == 0, "\(mismatches) reads differed from what was written; \(random)")
        #expect(pair.bytesWritten == total && pair.bytesRead == total)
        #expect(pair.input.streamStatus == .atEnd)
    }

    /// A full buffer makes `write` return 0 without blocking, and `.hasSpaceAvailable` comes
    /// once the reader drains it.
    @Test func writeReturnsZeroWhenFullAndSpaceEventFollowsTheDrain() throws {
        let pair = BoundStreamPair(bufferSize: 16)
        let recorder = StreamEventRecorder()
        pair.output.delegate = recorder
        pair.output.setDispatchQueue(DispatchQueue(label: "events"))
        pair.input.open()
        pair.output.open()
        #expect(recorder.waitFor(.hasSpaceAvailable) != nil)

        let bytes = [UInt8](repeating: 7, count: 20)
        #expect(pair.output.write(bytes, maxLength: 20) == 16)
        #expect(pair.output.write(bytes, maxLength: 20) == 0)
        #expect(pair.output.hasSpaceAvailable == false)

        var sink = [UInt8](repeating: 0, count: 10)
        #expect(pair.input.read(&sink, maxLength: 10) == 10)
        #expect(recorder.waitFor(.hasSpaceAvailable, count: 2) != nil)
        #expect(pair.output.hasSpaceAvailable)
        #expect(pair.output.write(bytes, maxLength: 20) == 10)
    }

    /// Closing the output hands the reader the buffered bytes, then the end.
    @Test func closeDeliversTheRestThenTheEnd() {
        let pair = openPair(bufferSize: 64)
        let recorder = StreamEventRecorder()
        pair.input.delegate = recorder
        pair.input.setDispatchQueue(DispatchQueue(label: "events"))
        #expect(pair.output.write(Array("hello".utf8), maxLength: 5) == 5)
        pair.output.close()

        #expect(pair.input.hasBytesAvailable)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(pair.input.read(&buffer, maxLength: 64) == 5)
        #expect(Array(buffer[0..<5]) == Array("hello".utf8))
        #expect(pair.input.read(&buffer, maxLength: 64) == 0)
        #expect(pair.input.hasBytesAvailable == false)
        #expect(pair.input.streamStatus == .atEnd)
        #expect(recorder.waitFor(.endEncountered) != nil)
    }

    /// An idle open pair keeps `hasBytesAvailable` true (URLSession takes false as the end of
    /// the body), and `read` waits until a byte is written.
    @Test func readWaitsForTheWriterInsteadOfReportingTheEnd() async {
        let pair = openPair(bufferSize: 64)
        #expect(pair.input.hasBytesAvailable)
        let recorder = StreamEventRecorder()
        pair.output.delegate = recorder
        pair.output.setDispatchQueue(DispatchQueue(label: "events"))
        let input = StreamReference(pair.input)
        let result = Task.detached { () -> [UInt8] in
            var buffer = [UInt8](repeating: 0, count: 8)
            let count = input.value.read(&buffer, maxLength: 8)
            return Array(buffer.prefix(max(count, 0)))
        }
        // Given: the reader is parked in `read` (nothing was written, the writer is open).
        let core = pair.input.core
        #expect(await eventually { core.testOnly_readerIsWaiting })
        #expect(pair.bytesRead == 0)
        #expect(pair.output.write([42], maxLength: 1) == 1)
        #expect(await result.value == [42])
    }

    /// A failure on the writing side reaches the reader: a waiting `read` wakes and returns -1
    /// with the writer's error.
    @Test func writerFailureWakesAndFailsTheReader() async {
        let pair = openPair(bufferSize: 64)
        let input = StreamReference(pair.input)
        let result = Task.detached { () -> Int in
            var buffer = [UInt8](repeating: 0, count: 8)
            return input.value.read(&buffer, maxLength: 8)
        }
        pair.output.fail(StreamUpError(.cancelled, "test cancelled"))
        #expect(await result.value == -1)
        #expect(pair.input.streamStatus == .error)
        #expect((pair.input.streamError as? StreamUpError)?.code == .cancelled)
        #expect(pair.output.write([1], maxLength: 1) == -1)
    }

    /// When the reader closes, the writer's next write fails and it gets `.errorOccurred`.
    @Test func readerCloseFailsTheWriter() {
        let pair = openPair(bufferSize: 64)
        let recorder = StreamEventRecorder()
        pair.output.delegate = recorder
        pair.output.setDispatchQueue(DispatchQueue(label: "events"))
        pair.input.close()
        #expect(pair.output.write([1, 2, 3], maxLength: 3) == -1)
        #expect((pair.output.streamError as? StreamUpError)?.code == .bodyStreamClosed)
        #expect(recorder.waitFor(.errorOccurred) != nil)
    }

    /// Events arrive on the dispatch queue the stream was given.
    @Test func eventsArriveOnTheScheduledQueue() {
        let pair = BoundStreamPair(bufferSize: 64)
        let queue = DispatchQueue(label: "scheduled")
        queue.setSpecific(key: StreamEventRecorder.queueKey, value: "scheduled")
        let recorder = StreamEventRecorder()
        pair.input.delegate = recorder
        pair.input.setDispatchQueue(queue)
        pair.input.open()
        pair.output.open()
        _ = pair.output.write([1], maxLength: 1)
        let arrival = recorder.waitFor(.hasBytesAvailable)
        #expect(arrival?.queueMarker == "scheduled")
        #expect(recorder.events.first == .openCompleted)
    }

    /// Events arrive on the run loop the stream was scheduled in, as in Apple's "Uploading
    /// Streams of Data" recipe, waking the loop from another thread.
    @Test func eventsArriveOnTheScheduledRunLoop() {
        let pair = BoundStreamPair(bufferSize: 64)
        let recorder = StreamEventRecorder()
        let ready = OnceBox()
        let done = OnceBox()
        let output = StreamReference(pair.output)
        let loopThreadID = ThreadIDBox()
        let loopThread = Thread {
            loopThreadID.set(pthread_self())
            output.value.delegate = recorder
            output.value.schedule(in: .current, forMode: .default)
            output.value.open()
            ready.set()
            // Keep the loop alive with a distant timer, and spin it until the test is done.
            RunLoop.current.add(Timer(timeInterval: 3600, repeats: false) { _ in }, forMode: .default)
            while !done.isSet { _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.2)) }
        }
        loopThread.start()
        #expect(eventually { ready.isSet })
        pair.input.open()
        #expect(recorder.waitFor(.hasSpaceAvailable)?.thread == loopThreadID.value)
        // Fill, then drain from this thread: the next space event must wake the sleeping loop.
        #expect(pair.output.write([UInt8](repeating: 0, count: 64), maxLength: 64) == 64)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(pair.input.read(&buffer, maxLength: 64) == 64)
        #expect(recorder.waitFor(.hasSpaceAvailable, count: 2)?.thread == loopThreadID.value)
        done.set()
        pair.output.close()
    }
}

/// A flag one thread sets and another polls.
///
/// Thread safety: guarded by `lock`.
final class OnceBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// The pthread of a thread under test, set once by that thread.
///
/// Thread safety: guarded by `lock`.
final class ThreadIDBox: @unchecked Sendable {
    private let lock = NSLock()
    private var id: pthread_t?
    var value: pthread_t? { lock.withLock { id } }
    func set(_ value: pthread_t) { lock.withLock { id = value } }
}
