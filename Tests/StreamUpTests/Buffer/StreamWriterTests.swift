import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// One ``StreamWriter`` shared by an app's tasks and threads: writers take turns in the order
/// they came, each write goes into the stream whole, and a write that must not wait gives up
/// instead of waiting for space.
extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2))) struct StreamWriterTests {
        /// Eight tasks write lines of different lengths through one writer into a buffer far
        /// smaller than what they write (so they wait for space, in line): the sink gets every
        /// line whole, and each task's lines in the order it wrote them.
        @Test func tasksSharingOneWriterDeliverEveryWriteWholeAndInOrder() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                var options = StreamUploader.Options()
                options.storage = .memory(capacity: 4096)
                options.maxRecordBytes = 4096
                options.segmentDuration = .milliseconds(20)
                let answer = try await StreamUploader.withUploader(UploadConfiguration(url: sink.url), options: options) { writer in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for task in 0..<8 {
                            group.addTask {
                                for index in 0..<150 {
                                    let padding = String(repeating: "p", count: (task * 31 + index * 17) % 900)
                                    // Lines longer than the free room are written in pieces while
                                    // the writer holds its turn.
                                    try await writer.write(Array("\(task) \(index) \(padding)\n".utf8))
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                #expect(answer.isSuccess)
                let body = sink.requests.filter(\.isComplete).sorted { $0.sequence < $1.sequence }.flatMap { $0.body ?? [] }
                var next = [Int](repeating: 0, count: 8)
                for line in body.split(separator: UInt8(ascii: "\n")) {
                    let fields = String(decoding: line, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
                    guard fields.count == 3, let task = Int(fields[0]), let index = Int(fields[1]), (0..<8).contains(task) else {
                        Issue.record("a torn line: \(String(decoding: line.prefix(80), as: UTF8.self))")
                        return
                    }
                    #expect(index == next[task], "task \(task): line \(index) after \(next[task] - 1)")
                    #expect(fields[2].count == (task * 31 + index * 17) % 900, "task \(task), line \(index) is not whole")
                    next[task] = index + 1
                }
                #expect(next == [Int](repeating: 150, count: 8))
            }
        }

        /// Tasks and a producer thread (blocking writes) share one writer: each write whole.
        @Test func tasksAndAThreadShareOneWriter() async throws {
            let buffer = ReplayBuffer.live(capacity: 256)
            let writer = StreamWriter(buffer: buffer)
            let reader = Task.detached {
                var bytes: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 100)
                while true {
                    guard case .bytes(let count) = try chunk.withUnsafeMutableBytes({ try buffer.readLive(into: $0, blocking: true) }) else { break }
                    bytes += chunk[..<count]
                }
                return bytes
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await writer.runBlocking { blocking in
                        for index in 0..<200 { try blocking.write(Array("thread \(index) \(String(repeating: "t", count: index % 150))\n".utf8), mark: nil) }
                    }
                }
                for task in 0..<3 {
                    group.addTask {
                        for index in 0..<200 {
                            try await writer.write(Array("task\(task) \(index) \(String(repeating: "a", count: index % 150))\n".utf8))
                        }
                    }
                }
                try await group.waitForAll()
            }
            writer.finish()
            let lines = try await reader.value.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
            #expect(lines.count == 800)
            for name in ["thread", "task0", "task1", "task2"] {
                let own = lines.filter { $0.hasPrefix(name + " ") }
                #expect(own == (0..<200).map { "\(name) \($0) \(String(repeating: name == "thread" ? "t" : "a", count: $0 % 150))" })
            }
        }

        /// A write that must not wait gives up when the bytes do not fit, and when a writer ahead
        /// waits for space, even if its own bytes would fit; it waits only, as on a lock, for
        /// writers ahead that are copying.
        @Test func writeIfSpaceNeverWaitsForSpace() async throws {
            let buffer = ReplayBuffer(capacity: 64)
            let writer = StreamWriter(buffer: buffer)
            try await writer.write([UInt8](repeating: 1, count: 60))
            #expect(try [UInt8](repeating: 2, count: 8).withUnsafeBytes { try writer.tryWrite($0) } == .full)
            // A whole write of 8 bytes waits in line for room…
            let waiting = Task { try await writer.writeWhole([UInt8](repeating: 3, count: 8)) }
            try await waitUntil { buffer.withState { !$0.writers.entries.isEmpty } }
            // …so 2 bytes that fit are not written before it.
            #expect(try [UInt8](repeating: 4, count: 2).withUnsafeBytes { try writer.tryWrite($0) } == .full)
            buffer.acknowledge(upTo: 60)
            try await waiting.value
            #expect(try [UInt8](repeating: 4, count: 2).withUnsafeBytes { try writer.tryWrite($0) } == .written)
            var bytes: [UInt8] = []
            try buffer.copy(60..<70) { bytes += $0 }
            #expect(bytes == [UInt8](repeating: 3, count: 8) + [4, 4])
        }

        /// A task cancelled while it waits in line writes nothing, and the writers behind it go on.
        @Test func aCancelledWaiterWritesNothing() async throws {
            let buffer = ReplayBuffer(capacity: 16)
            let writer = StreamWriter(buffer: buffer)
            try await writer.write([UInt8](repeating: 1, count: 16))
            let cancelled = Task { try await writer.writeWhole([UInt8](repeating: 2, count: 8)) }
            try await waitUntil { buffer.withState { $0.writers.entries.count == 1 } }
            let behind = Task { try await writer.writeWhole([UInt8](repeating: 3, count: 4)) }
            try await waitUntil { buffer.withState { $0.writers.entries.count == 2 } }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            buffer.acknowledge(upTo: 16)
            try await behind.value
            #expect(buffer.writtenOffset == 20)
        }
    }
}

/// The line of writers as a pure state machine.
@Suite struct WriterLineTests {
    typealias Line = WriterLine<Int>

    /// Writers get the turn in the order they came, each once the bytes it needs are free; one
    /// that needs little does not pass one ahead that needs more.
    @Test func turnsGoInOrderOfArrival() {
        var line = Line()
        #expect(line.arrive(0, needs: 10, patience: .waits, quick: true, free: 10, closed: false) == .granted)
        #expect(line.arrive(1, needs: 8, patience: .waits, quick: true, free: 0, closed: false) == .queued)
        line.enqueue(.init(id: 1, needs: 8, patience: .waits, waiter: 1))
        #expect(line.arrive(2, needs: 1, patience: .waits, quick: true, free: 0, closed: false) == .queued)
        line.enqueue(.init(id: 2, needs: 1, patience: .waits, waiter: 2))
        line.leave(0)
        #expect(line.settle(free: 4, closed: false).isEmpty)
        #expect(line.settle(free: 8, closed: false).map(\.waiter) == [1])
        #expect(line.holder == 1)
        line.leave(1)
        #expect(line.settle(free: 1, closed: false).map(\.waiter) == [2])
    }

    /// The holder waiting for space keeps its turn and is first to go on; brief writers behind
    /// it give up; when the buffer closes, everyone in line is woken.
    @Test func theHolderWaitsFirstAndBriefWritersGiveUp() {
        var line = Line()
        #expect(line.arrive(0, needs: 1, patience: .waits, quick: true, free: 4, closed: false) == .granted)
        #expect(line.arrive(1, needs: 2, patience: .brief, quick: true, free: 4, closed: false) == .queued)
        line.enqueue(.init(id: 1, needs: 2, patience: .brief, waiter: 1))
        line.waitForSpace(.init(id: 0, needs: 1, patience: .waits, waiter: 0))
        let woken = line.settle(free: 0, closed: false)
        #expect(woken.map(\.waiter) == [1] && woken.map(\.outcome) == [.full])
        #expect(line.arrive(2, needs: 1, patience: .waits, quick: true, free: 0, closed: false) == .queued)
        line.enqueue(.init(id: 2, needs: 1, patience: .waits, waiter: 2))
        #expect(line.settle(free: 1, closed: false).map(\.waiter) == [0])
        #expect(line.holder == 0)
        #expect(line.settle(free: 1, closed: true).map(\.outcome) == [.closed])
    }
}
