import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp
@testable import StreamUpTail

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file's turns: whole lines only, partial lines wait, long lines go whole or in pieces,
/// every write carries the file's offset.
@Suite struct LineReaderTests {
    /// Collects what a reader writes.
    ///
    /// Thread safety: used from the test's task only.
    final class Collector: LineSink {
        var writes: [(bytes: [UInt8], mark: SourceMark?)] = []
        var text: String { String(decoding: writes.flatMap(\.bytes), as: UTF8.self) }
        func write(_ bytes: UnsafeRawBufferPointer, mark: SourceMark?) throws {
            writes.append((Array(bytes), mark))
        }
    }

    /// A file in a fresh temporary directory, opened for the reader.
    private func withFile(_ contents: String, _ body: (String, inout TailedFile) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("a.log")
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
        let file = try #require(try ReadOnlyFile.open(path))
        var tailed = TailedFile(identity: file.identity, path: path, file: file, offset: 0, now: .now)
        tailed.fingerprint = 42
        try body(path, &tailed)
    }

    private func append(_ text: String, to path: String) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    /// A turn writes up to the last newline; the partial line after it waits, and goes out
    /// whole once its newline is there. Marks give the file offset of each write.
    @Test func partialLinesWaitForTheirNewline() throws {
        try withFile("one\ntwo\nthr") { path, tailed in
            let reader = LineReader(chunk: 1024, maxLine: 1 << 20)
            let sink = Collector()
            #expect(try reader.turn(&tailed, into: sink) == .end)
            #expect(sink.text == "one\ntwo\n")
            #expect(tailed.offset == 8 && tailed.pending == 3)
            #expect(sink.writes.map(\.mark) == [.verbatim(tailed.sourceID, from: 0)])
            // Nothing more while the line is unfinished.
            #expect(try reader.turn(&tailed, into: sink) == .end)
            #expect(sink.text == "one\ntwo\n")
            try append("ee\n", to: path)
            #expect(try reader.turn(&tailed, into: sink) == .end)
            #expect(sink.text == "one\ntwo\nthree\n")
            #expect(sink.writes.last?.mark == .verbatim(tailed.sourceID, from: 8))
        }
    }

    /// A turn takes at most one chunk (ending at a line boundary): a busy file hands over.
    @Test func aTurnTakesAtMostOneChunk() throws {
        let lines = (0..<100).map { "line \($0)\n" }.joined()
        try withFile(lines) { _, tailed in
            let reader = LineReader(chunk: 64, maxLine: 1 << 20)
            let sink = Collector()
            var turns = 0
            while try reader.turn(&tailed, into: sink) == .more { turns += 1 }
            #expect(sink.text == lines)
            #expect(sink.writes.allSatisfy { $0.bytes.count <= 64 && $0.bytes.last == 0x0A })
            #expect(turns >= lines.utf8.count / 64)
        }
    }

    /// A line longer than a chunk is searched for over several turns and then written whole,
    /// in one go; the lines around it are untouched.
    @Test func aLongLineGoesOutWholeOnceItsNewlineIsThere() throws {
        let long = String(repeating: "x", count: 500)
        try withFile("a\n" + long) { path, tailed in
            let reader = LineReader(chunk: 64, maxLine: 1 << 20)
            let sink = Collector()
            while try reader.turn(&tailed, into: sink) == .more {}
            #expect(sink.text == "a\n")
            #expect(tailed.pending == 500)
            try append("\nb\n", to: path)
            while try reader.turn(&tailed, into: sink) == .more {}
            #expect(sink.text == "a\n" + long + "\nb\n")
        }
    }

    /// A line past `maxLine` goes out in pieces of exactly `maxLine` bytes.
    @Test func anOverlongLineIsSentInPiecesOfMaxLine() throws {
        let long = String(repeating: "y", count: 1000)
        try withFile(long) { _, tailed in
            let reader = LineReader(chunk: 64, maxLine: 256)
            let sink = Collector()
            while try reader.turn(&tailed, into: sink) == .more {}
            #expect(sink.text == String(repeating: "y", count: 768))
            #expect(tailed.offset == 768)
        }
    }

    /// Finishing a file sends the bytes after its last newline with a newline added, and says
    /// how many file bytes that was.
    @Test func finishAddsTheMissingNewline() throws {
        try withFile("done\nhalf") { _, tailed in
            let reader = LineReader(chunk: 1024, maxLine: 1 << 20)
            let sink = Collector()
            _ = try reader.turn(&tailed, into: sink)
            #expect(try reader.finish(&tailed, into: sink) == 4)
            #expect(sink.text == "done\nhalf\n")
            #expect(sink.writes.last?.mark == nil)
            #expect(tailed.offset == 9)
        }
    }

    /// A file shorter than what was sent is reported truncated.
    @Test func aShorterFileIsTruncated() throws {
        try withFile("one\ntwo\n") { path, tailed in
            let reader = LineReader(chunk: 1024, maxLine: 1 << 20)
            let sink = Collector()
            _ = try reader.turn(&tailed, into: sink)
            try "x\n".write(toFile: path, atomically: false, encoding: .utf8)
            #expect(try reader.turn(&tailed, into: sink) == .truncated)
        }
    }

    #if os(Linux)
    /// Following a log does not write its inode: a file written after it was last read (its
    /// access time older than its modification time, where `relatime` would update it on every
    /// read) keeps its access time through the reader's turns.
    @Test func readingLeavesTheAccessTimeAlone() throws {
        try withFile("one\n") { path, tailed in
            var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: time(nil), tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            let reader = LineReader(chunk: 1024, maxLine: 1 << 20)
            let sink = Collector()
            #expect(try reader.turn(&tailed, into: sink) == .end)
            try append("two\n", to: path)
            #expect(try reader.turn(&tailed, into: sink) == .end)
            #expect(sink.text == "one\ntwo\n")
            var status = stat()
            #expect(stat(path, &status) == 0)
            #expect(status.st_atim.tv_sec == 1_000_000)
        }
    }
    #endif
}
