import Foundation
import Testing
@testable import StreamUp

#if canImport(Glibc)
import Glibc
import StreamUpTestSupport
#endif
import StreamUpSystem

/// Every test follows files in a temporary directory of its own, drives the follower into a
/// bound stream pair, reads the pair on a thread of its own, and checks the exact bytes that
/// arrived. Waits observe (`eventually`, a poll with a deadline); nothing sleeps in their place.
///
/// Thread safety: serialized; each test owns its directory, follower and harness.
@Suite(.serialized, .timeLimit(.minutes(1))) struct FileFollowerTests {
    // MARK: - Following

    /// Starting at the end, what the file held is not sent; every appended line is.
    @Test func appendedLinesArriveButExistingContentDoesNot() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try append("old line\n", to: path)
            let follower = FileFollower(path: path)
            try await following(follower) { harness in
                try await harness.waitUntilStarted()
                try append("one\n", to: path)
                try await harness.expect("one\n")
                try append("two\n", to: path)
                try await harness.expect("one\ntwo\n")
                // The position counts from the file's start, including what was not sent.
                try await waitUntil { follower.position?.offset == Int64("old line\none\ntwo\n".utf8.count) }
            }
        }
    }

    /// `.beginning` sends what is there, then what is appended.
    @Test func beginningSendsExistingContentFirst() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try append("a\nb\n", to: path)
            try await following(FileFollower(path: path, startAt: .beginning)) { harness in
                try await harness.expect("a\nb\n")
                try append("c\n", to: path)
                try await harness.expect("a\nb\nc\n")
            }
        }
    }

    /// A file bigger than the buffer is read only as fast as the reader drains it, and arrives
    /// whole.
    @Test func readsOnlyWhileTheBufferHasSpace() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/big.log"
            let content = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            try Data(content).write(to: URL(fileURLWithPath: path))
            let follower = FileFollower(path: path, startAt: .beginning, readSize: 1000)
            try await following(follower, bufferSize: 4096, reading: false) { harness in
                // Given a reader that has not started, the follower fills the buffer and stops.
                try await waitUntil { follower.position?.offset == Int64(harness.pair.capacity) }
                #expect(harness.writer.bytesWritten == harness.pair.capacity)
                // When the reader starts, then everything arrives, in order.
                harness.startReading()
                try await harness.expect(content)
            }
        }
    }

    // MARK: - Rotation, truncation, re-creation

    /// logrotate `create`: the file is renamed, a new one created; the old one keeps being
    /// written until the program reopens. Every byte arrives once, old file first.
    @Test func renameRotationDrainsTheOldFileThenFollowsTheNewOne() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let old = try Appender(path)
            try await following(FileFollower(path: path)) { harness in
                try await harness.waitUntilStarted()
                try old.write("1 before\n")
                try await harness.expect("1 before\n")

                // When the file is renamed and still written through the old descriptor,
                try rename(path, to: path + ".1")
                try old.write("2 renamed\n")
                try await harness.expect("1 before\n2 renamed\n")
                // and a new empty file appears while the old one still gets a line,
                let new = try Appender(path)
                try await waitUntil { harness.follower.hasEmptyReplacement }
                try old.write("3 after create\n")
                try await harness.expect("1 before\n2 renamed\n3 after create\n")
                // and then the program switches to the new file,
                try new.write("4 new\n")
                try new.write("5 new\n")
                // then the old file's bytes all came first, and the new file is read from its start.
                try await harness.expect("1 before\n2 renamed\n3 after create\n4 new\n5 new\n")
                #expect(!harness.follower.hasEmptyReplacement)
                try new.write("6 new\n")
                try await harness.expect("1 before\n2 renamed\n3 after create\n4 new\n5 new\n6 new\n")
            }
        }
    }

    /// logrotate `copytruncate`: the file is copied, then truncated in place; what is written
    /// after the truncation is sent from offset 0.
    @Test func copytruncateRestartsFromTheNewStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let writer = try Appender(path)
            try await following(FileFollower(path: path)) { harness in
                try await harness.waitUntilStarted()
                try writer.write("a fairly long first line\n")
                try await harness.expect("a fairly long first line\n")

                try FileManager.default.copyItem(atPath: path, toPath: path + ".1")
                #expect(truncate(path, 0) == 0)
                try writer.write("short\n")
                try await harness.expect("a fairly long first line\nshort\n")
                try writer.write("more\n")
                try await harness.expect("a fairly long first line\nshort\nmore\n")
                try await waitUntil { harness.follower.position?.offset == Int64("short\nmore\n".utf8.count) }
            }
        }
    }

    /// A deleted file that is created again is read from its start.
    @Test func deletedAndRecreatedFileIsReadFromItsStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try append("before start\n", to: path)
            try await following(FileFollower(path: path)) { harness in
                try await harness.waitUntilStarted()
                try append("b\n", to: path)
                try await harness.expect("b\n")
                #expect(unlink(path) == 0)
                try append("c\n", to: path)
                try await harness.expect("b\nc\n")
                try append("d\n", to: path)
                try await harness.expect("b\nc\nd\n")
            }
        }
    }

    /// A path that does not exist yet is waited for, and the file is read from its start
    /// even though the follower starts at the end.
    @Test func fileThatAppearsLaterIsReadFromItsStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/late.log"
            try await following(FileFollower(path: path)) { harness in
                try await harness.waitUntilStarted()
                #expect(harness.follower.position == nil)
                try append("hello\n", to: path)
                try await harness.expect("hello\n")
                try append("world\n", to: path)
                try await harness.expect("hello\nworld\n")
            }
        }
    }

    /// A path whose directory does not exist yet is found once both are created.
    @Test func fileInADirectoryThatAppearsLaterIsFound() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/later/app.log"
            try await following(FileFollower(path: path)) { harness in
                try await harness.waitUntilStarted()
                try FileManager.default.createDirectory(atPath: directory + "/later", withIntermediateDirectories: false)
                try append("first\n", to: path)
                try await harness.expect("first\n")
                try append("second\n", to: path)
                try await harness.expect("first\nsecond\n")
            }
        }
    }

    // MARK: - State

    /// After a restart with the saved state, exactly the bytes after the saved offset arrive,
    /// including those appended while nobody followed.
    @Test func restartWithSavedStateSendsOnlyWhatCameAfter() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let statePath = directory + "/follow.state"
            try append("existing\n", to: path)

            // Given a first run that delivered one line and saved its state,
            let first = FileFollower(path: path)
            try await following(first) { harness in
                try await harness.waitUntilStarted()
                try append("delivered\n", to: path)
                try await harness.expect("delivered\n")
            }
            let position = try #require(first.position)
            #expect(position.offset == Int64("existing\ndelivered\n".utf8.count))
            try #require(first.state).save(to: statePath)

            // When lines are appended while down, and a second run starts from the loaded state,
            try append("while down\n", to: path)
            let loaded = try #require(try FollowState.load(from: statePath))
            #expect(loaded == FollowState(path: path, position: position))
            try await following(FileFollower(path: path, state: loaded)) { harness in
                try await harness.waitUntilStarted()
                try append("after restart\n", to: path)
                // Then only what came after the saved offset arrives.
                try await harness.expect("while down\nafter restart\n")
            }
        }
    }

    /// A file rotated while nobody followed is found as `path.1` and finished from the saved
    /// offset before the new file is read from its start.
    @Test func restartAfterRotationFinishesTheRotatedFileFirst() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try append("sent\n", to: path)
            let first = FileFollower(path: path, startAt: .beginning)
            try await following(first) { harness in
                try await harness.expect("sent\n")
            }
            let saved = try #require(first.state)

            try append("unsent tail\n", to: path)
            try rename(path, to: path + ".1")
            try append("new file\n", to: path)

            try await following(FileFollower(path: path, state: saved)) { harness in
                try await harness.expect("unsent tail\nnew file\n")
                try append("more\n", to: path)
                try await harness.expect("unsent tail\nnew file\nmore\n")
            }
        }
    }

    /// Where to resume: at the offset in the same file, at 0 when it shrank, nowhere in another.
    @Test func resumeOffsetDependsOnIdentityAndSize() {
        let state = FollowState(path: "/x", device: 7, inode: 42, offset: 100)
        #expect(state.resumeOffset(for: FileIdentity(device: 7, inode: 42), size: 150) == 100)
        #expect(state.resumeOffset(for: FileIdentity(device: 7, inode: 42), size: 100) == 100)
        #expect(state.resumeOffset(for: FileIdentity(device: 7, inode: 42), size: 99) == 0)
        #expect(state.resumeOffset(for: FileIdentity(device: 7, inode: 43), size: 150) == nil)
        #expect(state.resumeOffset(for: FileIdentity(device: 8, inode: 42), size: 150) == nil)
    }

    /// The state file is valid JSON after each save, replaced whole, and no temporary file is
    /// left behind; a missing state file loads as nil.
    @Test func stateIsSavedAtomicallyAsJSON() async throws {
        try await withTemporaryDirectory { directory in
            let statePath = directory + "/follow.state"
            #expect(try FollowState.load(from: statePath) == nil)

            let state = FollowState(path: "/var/log/app.log", device: 2049, inode: UInt64.max - 1, offset: 123_456)
            try state.save(to: statePath)
            let newer = FollowState(path: "/var/log/app.log", device: 2049, inode: 77, offset: 9)
            try newer.save(to: statePath)

            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statePath)))
            let object = try #require(json as? [String: Any])
            #expect(object["path"] as? String == "/var/log/app.log")
            #expect((object["offset"] as? NSNumber)?.int64Value == 9)
            #expect(try FollowState.load(from: statePath) == newer)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["follow.state"])

            try state.save(to: statePath)
            #expect(try FollowState.load(from: statePath) == state)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["follow.state"])
        }
    }

    /// A file that is not a state file is reported, not mistaken for one.
    @Test func invalidStateFileThrows() async throws {
        try await withTemporaryDirectory { directory in
            let statePath = directory + "/follow.state"
            try append("{\"path\": 1}", to: statePath)
            #expect(throws: StreamUpError.self) { try FollowState.load(from: statePath) }
        }
    }

    // MARK: - Cancellation

    /// Cancelling while the follower waits for changes ends `produce` (it does not hang).
    @Test func cancellationWhileIdleEndsPromptly() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try append("x\n", to: path)
            let harness = Harness(FileFollower(path: path), bufferSize: 4096, reading: true)
            try await harness.waitUntilStarted()
            let elapsed = try await harness.stopMeasuring()
            #expect(elapsed < .seconds(5))  // ends instead of hanging; speed is not asserted
        }
    }

    /// Cancelling while the follower waits for a file that does not exist ends it promptly.
    @Test func cancellationWhileWaitingForTheFileEndsPromptly() async throws {
        try await withTemporaryDirectory { directory in
            let harness = Harness(FileFollower(path: directory + "/missing/app.log"), bufferSize: 4096, reading: true)
            try await harness.waitUntilStarted()
            let elapsed = try await harness.stopMeasuring()
            #expect(elapsed < .seconds(5))  // ends instead of hanging; speed is not asserted
        }
    }

    /// Cancelling while the follower waits for buffer space ends it promptly.
    @Test func cancellationWhileTheBufferIsFullEndsPromptly() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try Data(count: 100_000).write(to: URL(fileURLWithPath: path))
            let harness = Harness(FileFollower(path: path, startAt: .beginning), bufferSize: 4096, reading: false)
            try await waitUntil { harness.writer.availableSpace == 0 }
            let elapsed = try await harness.stopMeasuring()
            #expect(elapsed < .seconds(5))  // ends instead of hanging; speed is not asserted
        }
    }
}

// MARK: - Support

/// A follower producing into a bound stream pair, with a reader thread collecting what arrives.
///
/// Thread safety: the collected bytes are guarded by the `received` mutex; the rest is immutable
/// or used from the test's task.
private final class Harness: Sendable {
    let follower: FileFollower
    let pair: BoundStreamPairBox
    let writer: StreamWriter
    let task: Task<Void, Error>
    private let received = Mutex<[UInt8]>([])
    private let readerStarted = Mutex(false)

    init(_ follower: FileFollower, bufferSize: Int, reading: Bool) {
        self.follower = follower
        let pair = BoundStreamPair(bufferSize: bufferSize)
        pair.input.open()
        self.pair = BoundStreamPairBox(pair)
        let writer = StreamWriter(output: pair.output)
        self.writer = writer
        task = Task { try await follower.produce(into: writer) }
        if reading { startReading() }
    }

    /// Starts the thread that reads the pair until its end.
    func startReading() {
        guard readerStarted.withLock({ started in defer { started = true }; return !started }) else { return }
        let input = StreamReference(pair.pair.input)
        let thread = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBufferPointer { input.value.read($0.baseAddress!, maxLength: $0.count) }
                if count <= 0 { return }
                received.withLock { $0 += chunk[..<count] }
            }
        }
        thread.start()
    }

    var bytes: [UInt8] { received.withLock { $0 } }

    func waitUntilStarted() async throws {
        try await waitUntil { self.follower.hasStarted }
    }

    /// Waits until exactly `expected` has arrived; fails if more or other bytes arrive or the
    /// deadline passes.
    func expect(_ expected: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let arrived = await poll {
            let bytes = self.bytes
            return bytes.count >= expected.count || !expected.starts(with: bytes) ? bytes : nil
        }
        let bytes = arrived ?? self.bytes
        // Compared outside #expect: capturing megabyte operands makes it take seconds.
        if bytes != expected {
            Issue.record("received \(Self.describe(bytes)), expected \(Self.describe(expected))", sourceLocation: sourceLocation)
        }
    }

    /// The bytes as text when short, else their count and first bytes.
    private static func describe(_ bytes: [UInt8]) -> String {
        bytes.count <= 512
            ? String(reflecting: String(decoding: bytes, as: UTF8.self))
            : "\(bytes.count) bytes starting \(Array(bytes.prefix(16)))"
    }

    func expect(_ expected: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await expect(Array(expected.utf8), sourceLocation: sourceLocation)
    }

    /// Cancels the follower, waits for `produce` to end (it must throw `CancellationError`),
    /// then ends the body so the reader thread finishes. Returns how long `produce` took to end.
    func stopMeasuring() async throws -> Duration {
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        let elapsed = ContinuousClock.now - cancelled
        writer.finish()
        startReading()  // drains whatever is left so the reader sees the end
        switch result {
        case .success:
            Issue.record("produce returned instead of throwing CancellationError")
        case .failure(let error):
            #expect(error is CancellationError, "produce threw \(error)")
        }
        return elapsed
    }
}

/// Carries the pair (its streams opt out of `Sendable`) into the harness.
///
/// Thread safety: immutable; the streams are internally locked (see ``StreamReference``).
private struct BoundStreamPairBox: @unchecked Sendable {
    let pair: BoundStreamPair
    init(_ pair: BoundStreamPair) { self.pair = pair }
    var capacity: Int { pair.capacity }
}

/// Runs `body` with a harness following `follower`, and stops it however `body` ends.
private func following(
    _ follower: FileFollower, bufferSize: Int = 64 * 1024, reading: Bool = true,
    _ body: (Harness) async throws -> Void
) async throws {
    let harness = Harness(follower, bufferSize: bufferSize, reading: reading)
    do {
        try await body(harness)
    } catch {
        _ = try? await harness.stopMeasuring()
        throw error
    }
    _ = try await harness.stopMeasuring()
}

/// A writer that keeps its descriptor (`O_APPEND`) across renames, as a logging program does.
///
/// Thread safety: used from the test's task only.
private final class Appender {
    let fd: CInt
    init(_ path: String) throws {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }
    deinit { close(fd) }
    func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw POSIXError(.EIO) }
    }
}

/// Appends `text` to `path` (creating it), closing the file again.
private func append(_ text: String, to path: String) throws {
    try Appender(path).write(text)
}

private func rename(_ from: String, to: String) throws {
    guard Glibc.rename(from, to) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
}
