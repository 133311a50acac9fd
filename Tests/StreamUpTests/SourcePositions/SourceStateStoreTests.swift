import Foundation
import StreamUpSystem
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The state store's side of ``SourceChange``: followed sources are recorded without moving a
/// known one back, gone ones are marked, and forgotten only after `forgetAfter`.
@Suite struct SourceStateStoreTests {
    private let a = SourceID(device: 1, inode: 10, fingerprint: 7)
    private let b = SourceID(device: 1, inode: 11, fingerprint: 8)

    private func withStore(forgetAfter: Duration?, clock: WallClock = WallClock(), _ body: (SourceStateStore, String) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("state")
        let initial = SourceState(sources: [SourcePosition(source: a, path: "/logs/a.log", offset: 500)])
        let store = SourceStateStore(file: file, initial: initial, streamID: "s", streamOffset: 0, forgetAfter: forgetAfter) { clock.now }
        try body(store, file)
    }

    /// A source followed from its end is saved at once (no byte of it was sent); following a
    /// known source again keeps the position acknowledgements gave it.
    @Test func followedSourcesAreSavedWithoutMovingKnownOnesBack() throws {
        try withStore(forgetAfter: nil) { store, file in
            store.record(.following(SourcePosition(source: b, path: "/logs/b.log", offset: 1234)))
            store.record(.following(SourcePosition(source: a, path: "/logs/a-renamed.log", offset: 0)))
            try store.save()
            let saved = try #require(try SourceState.load(from: file))
            #expect(
                saved.sources == [
                    SourcePosition(source: a, path: "/logs/a-renamed.log", offset: 500),
                    SourcePosition(source: b, path: "/logs/b.log", offset: 1234),
                ])
        }
    }

    /// A stopped source keeps its position with the time it went; it is forgotten once gone
    /// longer than `forgetAfter`, and not before; one that comes back is no longer gone.
    @Test func goneSourcesAreForgottenAfterTheirTime() throws {
        let clock = WallClock(Date(timeIntervalSince1970: 1_000_000))
        try withStore(forgetAfter: .seconds(3600), clock: clock) { store, file in
            store.record(.following(SourcePosition(source: b, path: "/logs/b.log", offset: 9)))
            store.record(.stopped(a))
            store.record(.stopped(b))
            store.record(.following(SourcePosition(source: b, path: "/logs/b.log", offset: 0)))
            clock.now = Date(timeIntervalSince1970: 1_000_000 + 3599)
            try store.save()
            var saved = try #require(try SourceState.load(from: file))
            #expect(saved.sources.map(\.source) == [a, b])
            #expect(saved.sources.first?.goneSince == 1_000_000)
            #expect(saved.sources.last?.goneSince == nil)
            // An acknowledgement for a gone source does not bring it back.
            store.update([a: 600], at: 10) { _, _ in nil }
            clock.now = Date(timeIntervalSince1970: 1_000_000 + 3601)
            try store.save()
            saved = try #require(try SourceState.load(from: file))
            #expect(saved.sources.map(\.source) == [b])
        }
    }

    /// The time a source went is kept in whole seconds, rounded up: a source gone for less
    /// than `forgetAfter` is never forgotten, even when it went just before a second ends.
    @Test func aSourceIsNeverForgottenEarly() throws {
        let clock = WallClock(Date(timeIntervalSince1970: 1_000_000.9))
        try withStore(forgetAfter: .seconds(1), clock: clock) { store, file in
            store.record(.stopped(a))
            clock.now = Date(timeIntervalSince1970: 1_000_001.5)  // gone 0.6 s
            try store.save()
            #expect(try SourceState.load(from: file)?.sources.map(\.source) == [a])
            clock.now = Date(timeIntervalSince1970: 1_000_002.1)  // gone 1.2 s
            try store.save()
            #expect(try SourceState.load(from: file)?.sources.isEmpty == true)
        }
    }

    /// A forgotten source stays forgotten when a spool's checkpoint reports it again (it
    /// reports every source it ever held), until the producer follows it again; a checkpoint
    /// that changes nothing writes nothing.
    @Test func forgottenSourcesStayForgottenAndIdleCheckpointsWriteNothing() throws {
        let clock = WallClock(Date(timeIntervalSince1970: 1_000_000))
        try withStore(forgetAfter: .seconds(60), clock: clock) { store, file in
            store.update([a: 500, b: 70], at: 100) { _, _ in "/logs/b.log" }
            store.record(.stopped(a))
            try store.save()
            clock.now = Date(timeIntervalSince1970: 1_000_100)
            try store.save()
            #expect(try SourceState.load(from: file)?.sources.map(\.source) == [b])
            // The same checkpoint again: a stays forgotten, and the file is not rewritten.
            try FileManager.default.removeItem(atPath: file)
            store.update([a: 500, b: 70], at: 100) { _, _ in nil }
            try store.save()
            #expect(FileManager.default.fileExists(atPath: file) == false)
            // Followed again: known again.
            store.record(.following(SourcePosition(source: a, path: "/logs/a.log", offset: 500)))
            try store.save()
            #expect(try SourceState.load(from: file)?.sources.map(\.source) == [b, a])
        }
    }

    /// Without `forgetAfter`, nothing is ever forgotten.
    @Test func withoutALimitNothingIsForgotten() throws {
        try withStore(forgetAfter: nil, clock: WallClock(Date(timeIntervalSince1970: 0))) { store, file in
            store.record(.stopped(a))
            try store.save()
            #expect(try SourceState.load(from: file)?.sources.map(\.source) == [a])
        }
    }

    /// A state file saved by earlier versions for one followed file still loads, as that
    /// file's position; a file that is no state file is refused, not taken for one.
    @Test func aStateSavedForOneFileByEarlierVersionsLoads() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("state")
        try #"{"device":2049,"inode":77,"offset":9,"path":"/var/log/app.log","streamID":"s1","streamOffset":4}"#
            .write(toFile: file, atomically: false, encoding: .utf8)
        let loaded = try #require(try SourceState.load(from: file))
        #expect(
            loaded
                == SourceState(
                    streamID: "s1", streamOffset: 4,
                    sources: [SourcePosition(source: SourceID(device: 2049, inode: 77), path: "/var/log/app.log", offset: 9)]))
        try #"{"path": 1}"#.write(toFile: file, atomically: false, encoding: .utf8)
        #expect(throws: StreamUpError.self) { try SourceState.load(from: file) }
    }
}

/// A settable wall clock.
///
/// Thread safety: `now` is guarded by a mutex.
final class WallClock: Sendable {
    private let time: Mutex<Date>
    init(_ start: Date = Date()) { time = Mutex(start) }
    var now: Date {
        get { time.withLock { $0 } }
        set { time.withLock { $0 = newValue } }
    }
}
