import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ``FileDescriptorProducer`` on a pipe whose writer is alive and quiet (stdin of a program
/// that logs rarely): a cancel ends it at once, and other writers on the same writer never wait
/// for its input.
@Suite(.timeLimit(.minutes(1))) struct FileDescriptorProducerTests {
    /// A pipe the test writes into; the write end closes with it. The read end is closed only
    /// by ``closeReadEnd()``, once the producer reading it has ended.
    final class OpenPipe {
        let readEnd: Int32
        let writeEnd: Int32

        init() throws {
            var ends: [Int32] = [-1, -1]
            try #require(pipe(&ends) == 0)
            readEnd = ends[0]
            writeEnd = ends[1]
        }

        deinit {
            close(writeEnd)
        }

        func send(_ text: String) {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) } == bytes.count)
        }

        func closeReadEnd() {
            close(readEnd)
        }
    }

    /// A producer running into `writer` in a task, and whether it has ended.
    struct Running {
        let task: Task<Void, Error>
        let ended: Locked<Bool>

        init(_ producer: FileDescriptorProducer, into writer: StreamWriter) {
            let ended = Locked(false)
            self.ended = ended
            task = Task {
                defer { ended.withLock { $0 = true } }
                try await producer.produce(into: writer)
            }
        }

        var hasEnded: Bool { ended.withLock { $0 } }
    }

    /// Lines as records without time, host or path, so that they are the same whenever made.
    static func formatting() throws -> LineFormatting {
        LineFormatting(try RecordFormatter(format: .ndjson, keys: .init(time: nil, host: nil, path: nil), maxRecordBytes: 1 << 20))
    }

    /// Given a producer that read a line and waits for more on a pipe still open (writing the
    /// bytes as they are, or formatting lines), a cancel ends it, though no input comes and the
    /// pipe stays open.
    @Test(arguments: [false, true]) func cancelEndsAProducerWaitingOnAQuietOpenPipe(formatted: Bool) async throws {
        let input = try OpenPipe()
        let writer = StreamWriter(buffer: ReplayBuffer(capacity: 4096))
        let producer = FileDescriptorProducer(fileDescriptor: input.readEnd, formatting: formatted ? try Self.formatting() : nil)
        let running = Running(producer, into: writer)
        input.send("line\n")
        #expect(await eventually { writer.bytesWritten >= 5 })
        running.task.cancel()
        #expect(await eventually { running.hasEnded }, "the cancelled producer still waits for input")
        guard running.hasEnded else { return }
        await #expect(throws: (any Error).self) { try await running.task.value }
        input.closeReadEnd()
    }

    /// A producer waiting for input does not hold the writer's turn: an app's write on the same
    /// writer goes in at once.
    @Test func aWriteBesideAProducerWaitingForInputGoesInAtOnce() async throws {
        let input = try OpenPipe()
        let writer = StreamWriter(buffer: ReplayBuffer(capacity: 4096))
        let running = Running(FileDescriptorProducer(fileDescriptor: input.readEnd), into: writer)
        input.send("line\n")
        #expect(await eventually { writer.bytesWritten == 5 })
        let app = Task { try await writer.write(Array("app\n".utf8)) }
        #expect(await eventually { writer.bytesWritten == 9 }, "the write waits for the producer's input")
        app.cancel()
        running.task.cancel()
        #expect(await eventually { running.hasEnded })
        if running.hasEnded { input.closeReadEnd() }
    }

    /// Input that comes after a quiet spell is read, and the end of input ends the producer.
    @Test func inputAfterAQuietSpellIsReadAndItsEndEndsTheProducer() async throws {
        var input: OpenPipe? = try OpenPipe()
        let readEnd = try #require(input?.readEnd)
        let buffer = ReplayBuffer(capacity: 4096)
        let writer = StreamWriter(buffer: buffer)
        let running = Running(FileDescriptorProducer(fileDescriptor: readEnd), into: writer)
        input?.send("one\n")
        #expect(await eventually { writer.bytesWritten == 4 })
        input?.send("two\n")
        #expect(await eventually { writer.bytesWritten == 8 })
        input = nil
        try await running.task.value
        close(readEnd)
        var bytes: [UInt8] = []
        try buffer.copy(0..<8) { bytes += $0 }
        #expect(String(decoding: bytes, as: UTF8.self) == "one\ntwo\n")
    }

    /// With a line formatting, the producer's thread writes a record per line, the same records
    /// `LineRecords` makes of the input; the line still open at the end of input is the last.
    @Test func linesBecomeRecordsOnTheProducersThread() async throws {
        var input: OpenPipe? = try OpenPipe()
        let readEnd = try #require(input?.readEnd)
        let buffer = ReplayBuffer(capacity: 4096)
        let writer = StreamWriter(buffer: buffer)
        let formatting = try Self.formatting()
        let running = Running(FileDescriptorProducer(fileDescriptor: readEnd, formatting: formatting), into: writer)
        input?.send("one\ntw")
        input?.send("o\nthree")
        input = nil
        try await running.task.value
        close(readEnd)
        var lines = formatting.lineRecords()
        let text = Array("one\ntwo\nthree".utf8)
        let expected = text.withUnsafeBytes { lines.take($0, from: 0, readAt: Date()) + lines.flush(readAt: Date()) }.flatMap(\.bytes)
        #expect(expected.count > text.count)
        var bytes: [UInt8] = []
        try buffer.copy(0..<writer.bytesWritten) { bytes += $0 }
        #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    }
}
