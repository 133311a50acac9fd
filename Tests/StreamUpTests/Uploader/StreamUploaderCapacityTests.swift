import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The storage's capacity is what the caller gave: segments shrink to fit it (at most half of
/// it), and a capacity that cannot hold one record is refused, never raised.
@Suite(.timeLimit(.minutes(1))) struct StreamUploaderCapacityTests {
    /// `.memory(capacity: 1 MiB)` with the default 8 MiB segments against a server that stalls:
    /// the producer is paused with at most 1 MiB held (it became 8 MiB: the 4 MiB input went
    /// in whole), and segments are 512 KiB.
    @Test func aOneMiBMemoryBufferHoldsAtMostOneMiB() async throws {
        try await SinkServer.withRunning(SinkConfiguration(faults: SinkFaults(stallAfterBytes: 100_000))) { sink in
            var options = StreamUploader.Options()
            options.storage = .memory(capacity: 1 << 20)
            let uploader = try StreamUploader(UploadConfiguration(url: sink.url), options: options)
            #expect(uploader.options.segmentBytes == 512 << 10)
            let line = Array(String(repeating: "x", count: 99).utf8) + [0x0A]
            let (lines, continuation) = AsyncStream<[UInt8]>.makeStream()
            for _ in 0..<(4 << 20) / 100 { continuation.yield(line) }
            continuation.finish()
            let run = Task { try await uploader.run(AsyncSequenceProducer(lines)) }
            defer { run.cancel() }
            var mostHeld = 0
            let paused = await eventually {
                let progress = uploader.progress
                mostHeld = max(mostHeld, progress.held)
                return progress.pauses > 0
            }
            #expect(paused, "the producer never waited: \(uploader.progress)")
            #expect(mostHeld <= 1 << 20 && uploader.progress.held <= 1 << 20, "held \(mostHeld) bytes")
            uploader.cancel()
        }
    }

    /// A capacity smaller than one record is refused with a message naming the sizes; a spool
    /// the same.
    @Test func aCapacityBelowOneRecordIsRefused() throws {
        var options = StreamUploader.Options()
        options.storage = .memory(capacity: 512 << 10)
        let error = #expect(throws: StreamUpError.self) {
            try StreamUploader(UploadConfiguration(url: URL(string: "http://127.0.0.1:9/")!), options: options)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description.contains("cannot hold one record of up to 1048576 bytes") == true, "\(String(describing: error))")

        let temporary = try TemporaryDirectory()
        options.storage = .spool(directory: URL(fileURLWithPath: temporary.file("spool")), capacity: 512 << 10)
        let spoolError = #expect(throws: StreamUpError.self) {
            try StreamUploader(UploadConfiguration(url: URL(string: "http://127.0.0.1:9/")!), options: options)
        }
        #expect(spoolError?.description.contains("a spool of 524288 bytes") == true, "\(String(describing: spoolError))")
    }

    /// A spool holding more than its capacity (one that filled its file system, reopened with
    /// a smaller size) is drained: what it holds counts, it is not refused.
    @Test func aSpoolHoldingMoreThanItsCapacityIsDrained() async throws {
        let temporary = try TemporaryDirectory()
        let directory = temporary.file("spool")
        let line = Array(repeating: UInt8(0x61), count: 99) + [0x0A]
        let held = Array((0..<(2 << 20) / 100).map { _ in line }.joined())
        do {
            let spool = try SpoolStorage.open(directory: directory, capacity: 4 << 20, streamID: "full")
            try await StreamWriter(buffer: ReplayBuffer(storage: spool, records: .lines, maxRecord: 1 << 20)).write(held)
        }
        try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
            var options = StreamUploader.Options()
            // 512 KiB cannot hold a record of 1 MiB, but the 2 MiB the spool holds can.
            options.storage = .spool(directory: URL(fileURLWithPath: directory), capacity: 512 << 10)
            let uploader = try StreamUploader(UploadConfiguration(url: sink.url), options: options)
            let response = try await uploader.run(AsyncSequenceProducer(AsyncStream<[UInt8]> { $0.finish() }))
            #expect(response.isSuccess)
            #expect(sink.requests.reduce(0) { $0 + $1.bodyByteCount } == held.count)
        }
    }

    /// Segments are at most half the capacity, never more than asked, never 0.
    @Test(arguments: [(8 << 20, 8 << 20, 4 << 20), (1 << 20, 8 << 20, 1 << 20), (8 << 20, 1 << 20, 512 << 10), (8 << 20, 1, 1)])
    func segmentsAreAtMostHalfTheCapacity(requested: Int, capacity: Int, used: Int) {
        #expect(StreamUploader.segmentBytes(requested, capacity: capacity) == used)
    }
}
