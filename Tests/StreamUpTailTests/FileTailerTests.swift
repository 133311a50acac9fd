import Foundation
import StreamUpSystem
import StreamUpTestSupport
import Testing

@testable import StreamUp
@testable import StreamUpTail

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tailer producing into a replay buffer large enough that nothing has to be read out:
/// each test checks the exact bytes written, the events said and the sources reported. Waits
/// observe (`eventually`, a poll with a deadline); nothing sleeps in their place.
@Suite(.serialized, .timeLimit(.minutes(1))) struct FileTailerTests {
    /// Lines of two files written at once interleave only whole: a partial line waits for its
    /// newline while the other file's lines go on, and each write is marked with its file.
    @Test func linesOfSeveralFilesInterleaveOnlyWhole() async throws {
        try await withTemporaryDirectory { directory in
            try write("", to: directory + "/a.log")
            try write("", to: directory + "/b.log")
            try await tailing([directory + "/*.log"]) { harness in
                try await harness.waitUntilStarted()
                try append("a begins", to: directory + "/a.log")
                try append("b1\n", to: directory + "/b.log")
                try await harness.expect("b1\n")
                try append(" and ends\n", to: directory + "/a.log")
                try append("b2\n", to: directory + "/b.log")
                try await waitUntil { harness.text.count == "b1\na begins and ends\nb2\n".count }
                #expect(Set(harness.lines) == ["b1", "a begins and ends", "b2"])
                #expect(harness.lines.firstIndex(of: "b1") == 0)
                let positions = harness.buffer.latestSourcePositions.positions
                #expect(positions.values.sorted() == [6, 18])
            }
        }
    }

    /// A pattern that matches nothing and one whose directory does not exist are each said
    /// once; when the directory and a file appear, the file is read from its start.
    @Test func missingMatchesAreSaidOnceThenFollowed() async throws {
        try await withTemporaryDirectory { directory in
            let nested = directory + "/later/deeper"
            try await tailing([directory + "/*.log", nested + "/*.log"]) { harness in
                try await waitUntil {
                    harness.events.contains(.waitingForMatch(pattern: directory + "/*.log"))
                        && harness.events.contains(.directoryMissing(directory: nested, pattern: nested + "/*.log"))
                }
                try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: true)
                try write("first\n", to: nested + "/x.log")
                try await harness.expect("first\n")
                try write("second\n", to: directory + "/y.log")
                try await harness.expect("first\nsecond\n")
                #expect(harness.events.filter { if case .waitingForMatch = $0 { true } else { false } }.count == 1)
                #expect(harness.events.filter { if case .directoryMissing = $0 { true } else { false } }.count == 1)
            }
        }
    }

    /// A deleted file is read to its end and dropped; its unterminated last line goes out with
    /// a newline added (and is said), and the file is reported stopped.
    @Test func aDeletedFileIsFinishedWithItsLastLineCompleted() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/gone.log"
            try write("", to: path)
            var options = FileTailer.Options()
            options.rotateWait = .milliseconds(50)
            try await tailing([directory + "/*.log"], options: options) { harness in
                try await harness.waitUntilStarted()
                try append("one\ntwo", to: path)
                try await harness.expect("one\n")
                try FileManager.default.removeItem(atPath: path)
                try await harness.expect("one\ntwo\n")
                try await waitUntil { harness.events.contains(.finished(path: path)) }
                #expect(harness.events.contains(.unterminatedLine(path: path, bytes: 3)))
                let followed = harness.changes.compactMap { if case .following(let position) = $0 { position.source } else { nil } }
                #expect(harness.changes.contains(.stopped(try #require(followed.last))))
            }
        }
    }

    /// Saved positions resume the file whose fingerprint matches; a file with the same inode
    /// but other first bytes is a new file, read from its start.
    @Test func savedPositionsResumeOnlyTheFileWhoseFingerprintMatches() async throws {
        try await withTemporaryDirectory { directory in
            let kept = directory + "/kept.log"
            let reused = directory + "/reused.log"
            try write("hello\nworld\n", to: kept)
            try write("other\nlines\n", to: reused)
            let keptStatus = try #require(try FileStatus.of(path: kept, throwing: StreamUpError.self))
            let reusedStatus = try #require(try FileStatus.of(path: reused, throwing: StreamUpError.self))
            let keptPrint = Array("hello\nworld\n".utf8).withUnsafeBytes { FileFingerprint.value(of: $0) }
            let otherPrint = Array("former\ncontent\n".utf8).withUnsafeBytes { FileFingerprint.value(of: $0) }
            let saved = [
                SourcePosition(
                    source: SourceID(device: keptStatus.identity.device, inode: keptStatus.identity.inode, fingerprint: keptPrint), path: kept, offset: 6),
                SourcePosition(
                    source: SourceID(device: reusedStatus.identity.device, inode: reusedStatus.identity.inode, fingerprint: otherPrint), path: reused, offset: 6
                ),
            ]
            try await tailing([directory + "/*.log"], saved: saved) { harness in
                try await waitUntil { harness.lines.count == 3 }
                #expect(Set(harness.lines) == ["world", "other", "lines"])
            }
        }
    }

    /// With more files than descriptors, every line of every file arrives: idle files are
    /// closed and reopened when written to; the limit is said.
    @Test func moreFilesThanDescriptorsLoseNothing() async throws {
        try await withTemporaryDirectory { directory in
            let names = (0..<6).map { directory + "/f\($0).log" }
            for name in names { try write("", to: name) }
            var options = FileTailer.Options()
            options.maxOpenFiles = 2
            try await tailing([directory + "/*.log"], options: options) { harness in
                try await harness.waitUntilStarted()
                #expect(harness.events.contains(.tooManyFiles(count: 6, limit: 2)))
                var expected: Set<String> = []
                for round in 0..<3 {
                    for (index, name) in names.enumerated() {
                        try append("f\(index) r\(round)\n", to: name)
                        expected.insert("f\(index) r\(round)")
                    }
                    try await waitUntil { harness.lines.count == expected.count }
                }
                #expect(Set(harness.lines) == expected)
                #expect(harness.lines.count == expected.count)
            }
        }
    }

    /// A file that appears empty gets its fingerprint with its first bytes, before they go
    /// out: the source it is reported under is the one its bytes are marked with.
    @Test func aFileThatStartsEmptyIsFingerprintedBeforeItsFirstLine() async throws {
        try await withTemporaryDirectory { directory in
            try await tailing([directory + "/*.log"]) { harness in
                try await harness.waitUntilStarted()
                try write("", to: directory + "/new.log")
                try await waitUntil { harness.events.contains(.following(path: directory + "/new.log", offset: 0)) }
                try append("first\n", to: directory + "/new.log")
                try await harness.expect("first\n")
                let marked = try #require(harness.buffer.latestSourcePositions.positions.keys.first)
                #expect(marked.fingerprint == Array("first\n".utf8).withUnsafeBytes { FileFingerprint.value(of: $0) })
                #expect(harness.changes.contains(.following(SourcePosition(source: marked, path: directory + "/new.log", offset: 0))))
                // One file, counted once (`--metrics`' files followed), though its source changed.
                #expect(harness.tailer.followedFileCount == 1)
            }
        }
    }
}

// MARK: - copytruncate

extension FileTailerTests {
    /// 20 files written together; one is copied (`cp`, to a name the pattern does not match)
    /// and truncated right after its last line, while the tailer is held before reading it:
    /// that line is read from the copy, before the file's new lines; every line arrives once.
    @Test func aLineNotReadBeforeCopytruncateIsReadFromTheCopy() async throws {
        try await withTemporaryDirectory { directory in
            let names = (0..<20).map { String(format: "f%02d", $0) }
            var expected: [String: [String]] = [:]
            func appendToAll() throws {
                for name in names {
                    let line = "\(name) line \(expected[name, default: []].count)"
                    expected[name, default: []].append(line)
                    try append(line + "\n", to: "\(directory)/\(name).log")
                }
            }
            try appendToAll()
            let gate = Gate(pausingAt: "gate")
            var options = FileTailer.Options()
            options.startAt = .beginning
            try await tailing([directory + "/*.log"], options: options, gate: gate) { harness in
                try appendToAll()
                try await waitUntil { harness.lines.count == 40 }
                try write("", to: directory + "/gate.log")
                try await waitUntil { gate.pauses == 1 }
                try appendToAll()
                try copy(directory + "/f05.log", to: directory + "/f05.log.1")
                try truncate(directory + "/f05.log")
                try appendToAll()
                gate.open()
                try await waitUntil { harness.lines.count >= 80 }
                #expect(byFile(harness.lines) == expected)
                #expect(harness.lines.count == 80)
                #expect(harness.events.contains(.readingCopy(path: directory + "/f05.log", copy: directory + "/f05.log.1", offset: 22)))
            }
        }
    }

    /// Following a directory, logrotate's copy lands in it: it is not read from its start
    /// (its lines were sent from the file); what the file had not sent when it was truncated
    /// is read from it. Twice, the first copy renamed to `.2` before the second.
    @Test func aCopyInAFollowedDirectoryIsNotReadAgain() async throws {
        try await withTemporaryDirectory { directory in
            let log = directory + "/app.log"
            var written: [String] = []
            func appendLines(_ count: Int) throws {
                for _ in 0..<count {
                    written.append("app line \(written.count)")
                    try append(written.last! + "\n", to: log)
                }
            }
            try appendLines(3)
            let gate = Gate(pausingAt: "gate")
            var options = FileTailer.Options()
            options.startAt = .beginning
            try await tailing([directory], options: options, gate: gate) { harness in
                for round in 0..<2 {
                    try appendLines(2)
                    try await waitUntil { harness.lines.count == written.count }
                    try write("", to: directory + "/gate\(round).log")
                    try await waitUntil { gate.pauses == round + 1 }
                    if round == 1 { try FileManager.default.moveItem(atPath: log + ".1", toPath: log + ".2") }
                    try appendLines(1)
                    try copy(log, to: log + ".1")
                    try truncate(log)
                    try appendLines(1)
                    gate.open()
                    try await waitUntil { harness.lines.count >= written.count }
                }
                try appendLines(1)
                try await waitUntil { harness.lines.count >= written.count }
                #expect(harness.lines == written)
                #expect(harness.events.contains(.copy(path: log + ".1", of: log)))
            }
        }
    }

    /// A new file that starts with a followed file's first bytes but has bytes of its own is
    /// no copy: it is read from its start.
    @Test func aFileThatOnlyStartsLikeAnotherIsReadAsItself() async throws {
        try await withTemporaryDirectory { directory in
            try write("header\n", to: directory + "/a.log")
            var options = FileTailer.Options()
            options.startAt = .beginning
            try await tailing([directory + "/*.log"], options: options) { harness in
                try await harness.expect("header\n")
                try append("a1\n", to: directory + "/a.log")
                try await harness.expect("header\na1\n")
                try write("header\n", to: directory + "/b.log")
                try await waitUntil { harness.events.contains(.copy(path: directory + "/b.log", of: directory + "/a.log")) }
                try append("b1\n", to: directory + "/b.log")
                try await harness.expect("header\na1\nheader\nb1\n")
            }
        }
    }
}

// MARK: - One path

/// What a program following one log file depends on: `FileTailer` given a single path.
extension FileTailerTests {
    /// From its end (the default), what the file held is not sent, every appended line is, and
    /// the position counts from the file's start.
    @Test func onePathFromItsEndSendsOnlyAppendedLines() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try write("old line\n", to: path)
            try await tailing([path]) { harness in
                try await harness.waitUntilStarted()
                try append("one\n", to: path)
                try await harness.expect("one\n")
                try append("two\n", to: path)
                try await harness.expect("one\ntwo\n")
                try await waitUntil { harness.tailer.positions.map(\.offset) == [Int64("old line\none\ntwo\n".utf8.count)] }
                #expect(harness.tailer.positions.map(\.path) == [path])
            }
        }
    }

    /// From its beginning, what the file held goes first, then what is appended.
    @Test func onePathFromItsBeginningSendsWhatIsThereFirst() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try write("a\nb\n", to: path)
            var options = FileTailer.Options()
            options.startAt = .beginning
            try await tailing([path], options: options) { harness in
                try await harness.expect("a\nb\n")
                try append("c\n", to: path)
                try await harness.expect("a\nb\nc\n")
            }
        }
    }

    /// A path whose file and directory do not exist yet is waited for; the file is read from
    /// its start though the tailer starts at the end.
    @Test func onePathThatAppearsLaterIsReadFromItsStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/later/app.log"
            try await tailing([path]) { harness in
                try await harness.waitUntilStarted()
                try FileManager.default.createDirectory(atPath: directory + "/later", withIntermediateDirectories: false)
                try append("first\n", to: path)
                try await harness.expect("first\n")
                try append("second\n", to: path)
                try await harness.expect("first\nsecond\n")
            }
        }
    }

    /// logrotate `create`: the file is renamed and still written through its program's
    /// descriptor, also once a new empty file is at the name; when the program writes to the new
    /// file, every line arrives once, the old file's first, and only the new file is followed.
    @Test func onePathRenamedAwayIsDrainedThenTheNewFileIsFollowed() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let old = try Appender(path)
            try await tailing([path]) { harness in
                try await harness.waitUntilStarted()
                try old.write("1 before\n")
                try await harness.expect("1 before\n")
                // When the file is renamed and still written through the old descriptor,
                try rename(path, to: path + ".1")
                try old.write("2 renamed\n")
                try await harness.expect("1 before\n2 renamed\n")
                // and a new empty file appears while the old one still gets a line,
                let new = try Appender(path)
                try old.write("3 after create\n")
                try await harness.expect("1 before\n2 renamed\n3 after create\n")
                // and then the program switches to the new file,
                try new.write("4 new\n")
                try new.write("5 new\n")
                try await harness.expect("1 before\n2 renamed\n3 after create\n4 new\n5 new\n")
                try new.write("6 new\n")
                try await harness.expect("1 before\n2 renamed\n3 after create\n4 new\n5 new\n6 new\n")
                // then only the file at the name is followed, from its start.
                try await waitUntil { harness.tailer.positions.map(\.offset) == [Int64("4 new\n5 new\n6 new\n".utf8.count)] }
                #expect(harness.tailer.positions.map(\.path) == [path])
            }
        }
    }

    /// A file truncated in place (no copy anywhere) is read again from its start.
    @Test func onePathTruncatedInPlaceIsReadFromItsNewStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let writer = try Appender(path)
            try await tailing([path]) { harness in
                try await harness.waitUntilStarted()
                try writer.write("a fairly long first line\n")
                try await harness.expect("a fairly long first line\n")
                try truncate(path)
                try writer.write("short\n")
                try await harness.expect("a fairly long first line\nshort\n")
                try writer.write("more\n")
                try await harness.expect("a fairly long first line\nshort\nmore\n")
                try await waitUntil { harness.tailer.positions.map(\.offset) == [Int64("short\nmore\n".utf8.count)] }
            }
        }
    }

    /// A deleted file that is created again is read from its start.
    @Test func onePathDeletedAndCreatedAgainIsReadFromItsStart() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try write("before start\n", to: path)
            var options = FileTailer.Options()
            options.rotateWait = .milliseconds(50)
            try await tailing([path], options: options) { harness in
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

    /// After a restart from the saved state (as a state file holds it), exactly the lines after
    /// the saved offset arrive, those appended while nobody followed included.
    @Test func onePathRestartedFromSavedStateSendsOnlyWhatCameAfter() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let stateFile = directory + "/state.json"
            try write("existing\n", to: path)
            // Given a first run that delivered one line and saved where it stands,
            var first: [SourcePosition] = []
            try await tailing([path]) { harness in
                try await harness.waitUntilStarted()
                try append("delivered\n", to: path)
                try await harness.expect("delivered\n")
                try await waitUntil { harness.tailer.positions.first?.offset == Int64("existing\ndelivered\n".utf8.count) }
                first = harness.tailer.positions
            }
            try SourceState(sources: first).save(to: stateFile)
            // when lines are appended while down and a second run resumes from the loaded state,
            try append("while down\n", to: path)
            let saved = try #require(try SourceState.load(from: stateFile)).sources
            #expect(saved == first)
            try await tailing([path], saved: saved) { harness in
                try await harness.waitUntilStarted()
                try append("after restart\n", to: path)
                // then only what came after the saved offset arrives.
                try await harness.expect("while down\nafter restart\n")
            }
        }
    }

    /// A file rotated while nobody followed is found as `path.1` and finished from the saved
    /// offset before the new file at the name is read from its start.
    @Test func onePathRotatedWhileDownIsFinishedFromItsRotatedName() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let saved = try await positionsAfterSendingALineThenAppendingOne(to: path)
            try rename(path, to: path + ".1")
            try write("new file\n", to: path)
            try await tailing([path], saved: saved) { harness in
                try await harness.expect("unsent tail\nnew file\n")
                try append("more\n", to: path)
                try await harness.expect("unsent tail\nnew file\nmore\n")
            }
        }
    }

    /// A file rotated while nobody followed, with no new file at its name yet when following
    /// starts (a restart in the moment between logrotate's rename and the program's new file),
    /// is finished from the saved offset; the new file is read from its start when it comes.
    @Test func onePathRotatedWhileDownWithoutANewFileYetIsFinished() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let saved = try await positionsAfterSendingALineThenAppendingOne(to: path)
            try rename(path, to: path + ".1")
            try await tailing([path], saved: saved) { harness in
                try await harness.expect("unsent tail\n")
                try write("new file\n", to: path)
                try await harness.expect("unsent tail\nnew file\n")
                try append("more\n", to: path)
                try await harness.expect("unsent tail\nnew file\nmore\n")
            }
        }
    }

    /// Files made and rotated away while nobody followed (the pipeline down across two
    /// rotations) are read after the saved file is finished, oldest first, then the new file;
    /// an older rotated file and a compressed one are left alone.
    @Test func filesMadeAndRotatedWhileDownAreReadInOrder() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try writeOldRotatedFiles(path + ".5", compressed: path + ".4.gz")
            let saved = try await positionsAfterSendingALineThenAppendingOne(to: path)
            // Two rotations while down: the saved file is now .2, the one made after it .1.
            try rename(path, to: path + ".1")
            try write("made while down\n", to: path)
            try rename(path + ".1", to: path + ".2")
            try rename(path, to: path + ".1")
            try write("new file\n", to: path)
            try await tailing([path], saved: saved) { harness in
                try await harness.expect("unsent tail\nmade while down\nnew file\n")
                try append("more\n", to: path)
                try await harness.expect("unsent tail\nmade while down\nnew file\nmore\n")
            }
        }
    }

    /// With one rotated generation kept, a pipeline down across two rotations finds its saved
    /// file deleted: the file made after it, rotated away since, is read from its start (it was
    /// last written after the state was saved), then the new file; an older rotated file and a
    /// compressed one are left alone. Also when the new file got the deleted file's inode number.
    @Test(arguments: [false, true]) func aFileMadeAfterADeletedSavedFileIsReadBeforeTheNewOne(inodeTakenAgain: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try writeOldRotatedFiles(path + "-20261127", compressed: path + ".2.gz")
            var saved = try await positionsAfterSendingALineThenAppendingOne(to: path)
            let stateFile = directory + "/state.json"
            try SourceState(sources: saved).save(to: stateFile)
            // Two rotations while down, one generation kept: the saved file is deleted (moved
            // out of the directory, so that its inode number stays taken), the one made after it
            // is now .1.
            try rename(path, to: path + ".1")
            try write("made while down\n", to: path)
            #expect(mkdir(directory + "/deleted", 0o755) == 0)
            try rename(path + ".1", to: directory + "/deleted/app.log")
            try rename(path, to: path + ".1")
            try write("new file\n", to: path)
            if inodeTakenAgain {
                // As when the deleted file's inode number went to the new file.
                let new = try #require(try FileStatus.of(path: path, throwing: StreamUpError.self))
                saved = saved.map { position in
                    var position = position
                    position.source.device = new.identity.device
                    position.source.inode = new.identity.inode
                    return position
                }
            }
            try await tailing([path], saved: saved, savedAt: SourceState.lastSaved(at: stateFile)) { harness in
                try await harness.expect("made while down\nnew file\n")
                try append("more\n", to: path)
                try await harness.expect("made while down\nnew file\nmore\n")
            }
        }
    }

    /// A file renamed in the moment between the walk that finds it at start and its opening
    /// (a restart as logrotate renames it, before the program makes its new file) is finished
    /// from its saved offset where it went, then the new file is read from its start.
    @Test func onePathRotatedBetweenTheWalkAndItsOpeningIsFinished() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            let saved = try await positionsAfterSendingALineThenAppendingOne(to: path)
            // The walk says the other pattern matches nothing before it opens what it found:
            // the tailer is held there while the file is rotated.
            let gate = Gate(pausingAt: "later")
            try await tailing([directory + "/later.log", path], saved: saved, gate: gate) { harness in
                try await waitUntil { gate.pauses == 1 }
                try rename(path, to: path + ".1")
                gate.open()
                try await harness.expect("unsent tail\n")
                try write("new file\n", to: path)
                try await harness.expect("unsent tail\nnew file\n")
            }
        }
    }

    /// A file bigger than the buffer is read only as fast as the buffer is emptied: with the
    /// buffer full, the position does not run ahead of the bytes in it; emptied as it fills,
    /// the buffer passes every line, in order.
    @Test func onePathIsReadOnlyWhileTheBufferHasSpace() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/big.log"
            let content = (0..<1000).map { String(format: "line %04d of a file bigger than the buffer ..........\n", $0) }.joined()
            try write(content, to: path)
            var options = FileTailer.Options()
            options.startAt = .beginning
            let capacity = 8192
            try await tailing([path], options: options, capacity: capacity) { harness in
                let buffer = harness.buffer
                // Given nobody empties the buffer, the tailer fills it and waits.
                try await waitUntil { buffer.writtenOffset == capacity }
                #expect((harness.tailer.positions.first?.offset ?? 0) <= Int64(capacity))
                // When it is emptied as it fills, every line arrives, in order.
                var received: [UInt8] = []
                let all = await eventually {
                    // Whole lines only: the buffer acknowledges up to its last line's end.
                    let lineEnd = buffer.withState { $0.boundary }
                    try? buffer.copy(buffer.acknowledgedOffset..<lineEnd) { received += $0 }
                    buffer.acknowledge(upTo: lineEnd)
                    return received.count >= content.utf8.count
                }
                #expect(all)
                #expect(String(decoding: received, as: UTF8.self) == content)
                try await waitUntil { harness.tailer.positions.first?.offset == Int64(content.utf8.count) }
            }
        }
    }

    /// Cancelling ends `produce` with `CancellationError` while the tailer waits for a change,
    /// for a file that does not exist, or for space in a full buffer.
    @Test func cancellationEndsProduceWhileWaiting() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/app.log"
            try write("x\n", to: path)
            let idle = try TailHarness(patterns: [path], options: FileTailer.Options(), saved: [], gate: nil, capacity: 4096)
            try await idle.waitUntilStarted()
            await idle.expectCancellationEndsProduce()

            let missing = try TailHarness(patterns: [directory + "/missing/app.log"], options: FileTailer.Options(), saved: [], gate: nil, capacity: 4096)
            try await missing.waitUntilStarted()
            await missing.expectCancellationEndsProduce()

            try write(String(repeating: "a full line\n", count: 10_000), to: path)
            var options = FileTailer.Options()
            options.startAt = .beginning
            let full = try TailHarness(patterns: [path], options: options, saved: [], gate: nil, capacity: 4096)
            try await waitUntil { full.buffer.writtenOffset == 4096 }
            await full.expectCancellationEndsProduce()
        }
    }
}

// MARK: - Support

/// A tailer writing into a replay buffer; what it says and reports is collected.
///
/// Thread safety: collections are guarded by mutexes; the rest is immutable or used from the
/// test's task.
private final class TailHarness: Sendable {
    let tailer: FileTailer
    let buffer: ReplayBuffer
    let writer: StreamWriter
    let task: Task<Void, Error>
    private let said = Collected<SourceEvent>()
    private let reported = Collected<SourceChange>()

    init(patterns: [String], options: FileTailer.Options, saved: [SourcePosition], savedAt: Date? = nil, gate: Gate?, capacity: Int) throws {
        let said = self.said
        tailer = try FileTailer(patterns: patterns, options: options) { event in
            guard case .source(let source) = event.detail else { return }
            said.append(source)
            gate?.pass(source)
        }
        buffer = ReplayBuffer(capacity: capacity, records: .lines, tracksSources: true)
        writer = StreamWriter(buffer: buffer)
        tailer.resume(from: saved, savedAt: savedAt)
        let reported = self.reported
        tailer.reportSources { change in reported.append(change) }
        let tailer = self.tailer
        let writer = self.writer
        task = Task { try await tailer.produce(into: writer) }
    }

    var events: [SourceEvent] { said.values }
    var changes: [SourceChange] { reported.values }

    var text: String {
        var bytes: [UInt8] = []
        try? buffer.copy(0..<buffer.writtenOffset) { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    var lines: [String] { text.split(separator: "\n").map(String.init) }

    func waitUntilStarted() async throws {
        try await waitUntil { self.tailer.hasStarted }
    }

    /// Waits until exactly `expected` has been written (fails on other bytes or the deadline).
    func expect(_ expected: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let text = await poll {
            let text = self.text
            return text.count >= expected.count || !expected.hasPrefix(text) ? text : nil
        }
        #expect((text ?? self.text) == expected, sourceLocation: sourceLocation)
    }

    func stop() async {
        task.cancel()
        _ = await task.result
    }

    /// Cancels the tailer and waits for `produce` to end: it must throw `CancellationError`.
    func expectCancellationEndsProduce(sourceLocation: SourceLocation = #_sourceLocation) async {
        task.cancel()
        switch await task.result {
        case .success: Issue.record("produce returned instead of throwing CancellationError", sourceLocation: sourceLocation)
        case .failure(let error): #expect(error is CancellationError, "produce threw \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// Values appended from any thread (the tailer's callbacks), read by the test.
///
/// Thread safety: guarded by the `list` mutex.
private final class Collected<Value: Sendable>: Sendable {
    private let list = Mutex<[Value]>([])
    func append(_ value: Value) { list.withLock { $0.append(value) } }
    var values: [Value] { list.withLock { $0 } }
}

/// Holds the tailer's thread (its events come from it) each time it says it follows a file
/// whose name starts with `prefix`, until opened: what happens to the files meanwhile is not
/// read before.
///
/// Thread safety: `pauses` is guarded by a mutex; the semaphore is thread-safe.
private final class Gate: Sendable {
    let prefix: String
    private let paused = Mutex(0)
    private let closed = DispatchSemaphore(value: 0)

    init(pausingAt prefix: String) { self.prefix = prefix }

    /// From the tailer's thread: blocks there if `event` is one to pause at.
    func pass(_ event: SourceEvent) {
        let path: String
        switch event {
        case .following(let followed, _): path = followed
        case .waitingForMatch(let pattern): path = pattern
        default: return
        }
        guard path.split(separator: "/").last?.hasPrefix(prefix) == true else { return }
        paused.withLock { $0 += 1 }
        closed.wait()
    }

    /// How many times the tailer was held (it still is until ``open()``).
    var pauses: Int { paused.withLock { $0 } }

    func open() { closed.signal() }
}

private func tailing(
    _ patterns: [String], options: FileTailer.Options = FileTailer.Options(), saved: [SourcePosition] = [], savedAt: Date? = nil,
    gate: Gate? = nil, capacity: Int = 1 << 22, _ body: (TailHarness) async throws -> Void
) async throws {
    let harness = try TailHarness(patterns: patterns, options: options, saved: saved, savedAt: savedAt, gate: gate, capacity: capacity)
    do {
        try await body(harness)
    } catch {
        gate?.open()  // a failure may leave the tailer held
        await harness.stop()
        throw error
    }
    await harness.stop()
}

/// Given a first run that sent `sent\n` from `path` and saved where it stands, `unsent tail\n`
/// appended while nobody follows: the positions that run saved.
private func positionsAfterSendingALineThenAppendingOne(to path: String) async throws -> [SourcePosition] {
    try write("sent\n", to: path)
    var options = FileTailer.Options()
    options.startAt = .beginning
    var saved: [SourcePosition] = []
    try await tailing([path], options: options) { harness in
        try await harness.expect("sent\n")
        try await waitUntil { harness.tailer.positions.first?.offset == 5 }
        saved = harness.tailer.positions
    }
    try append("unsent tail\n", to: path)
    return saved
}

/// A rotated file (`old rotation\n` at `rotated`) and a compressed one (`compressed\n` at
/// `compressed`), both last written an hour ago: neither is read by a start.
private func writeOldRotatedFiles(_ rotated: String, compressed: String) throws {
    try write("old rotation\n", to: rotated)
    try write("compressed\n", to: compressed)
    for old in [rotated, compressed] {
        var anHourAgo = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &anHourAgo, 0) == 0)
    }
}

private func write(_ text: String, to path: String) throws {
    try text.write(toFile: path, atomically: false, encoding: .utf8)
}

private func append(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ POSIXCalls.write(fd, $0.baseAddress, $0.count) }) == bytes.count else { throw POSIXError(.EIO) }
}

/// `cp`: a new file with `path`'s bytes.
private func copy(_ path: String, to destination: String) throws {
    try FileManager.default.copyItem(atPath: path, toPath: destination)
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
        guard bytes.withUnsafeBytes({ POSIXCalls.write(fd, $0.baseAddress, $0.count) }) == bytes.count else { throw POSIXError(.EIO) }
    }
}

private func rename(_ from: String, to: String) throws {
    guard POSIXCalls.rename(from, to) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
}

/// Truncates `path` in place to nothing (copytruncate's second step).
private func truncate(_ path: String) throws {
    guard POSIXCalls.truncate(path, 0) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
}

/// Lines by file (their first word), in order.
private func byFile(_ lines: [String]) -> [String: [String]] {
    var files: [String: [String]] = [:]
    for line in lines { files[String(line.split(separator: " ").first ?? ""), default: []].append(line) }
    return files
}
