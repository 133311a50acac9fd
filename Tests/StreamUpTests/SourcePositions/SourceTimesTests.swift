import Foundation
import StreamUpSystem
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The times ``SourceTimes`` fixes for lines: distinct and increasing in a file, within 10 ms
/// of the clock, and the same for lines read again after a restart from what the state file
/// saved, whatever the clock says then.
@Suite struct SourceTimesTests {
    private let a = SourceID(device: 1, inode: 10, fingerprint: 7)
    private let b = SourceID(device: 1, inode: 11, fingerprint: 8)
    private let second: Int64 = 1_000_000_000

    /// Lines read close together share a base (one nanosecond per byte); a line read later than
    /// the base allows, or far past its start, gets a base of its own, at the clock.
    @Test func linesShareABaseWhileTheClockAgrees() {
        let times = SourceTimes()
        let t0: Int64 = 1_800_000_000 * second
        #expect(times.nanoseconds(of: a, at: 0, readAt: t0) == t0)
        #expect(times.nanoseconds(of: a, at: 100, readAt: t0 + 3_000_000) == t0 + 100)
        #expect(times.nanoseconds(of: a, at: 200, readAt: t0 + 50_000_000) == t0 + 50_000_000)
        let far = 200 + SourceTimes.span
        #expect(times.nanoseconds(of: a, at: far, readAt: t0 + 50_000_000) == t0 + 50_000_000 + SourceTimes.span)
        // Another file has bases of its own.
        #expect(times.nanoseconds(of: b, at: 100, readAt: t0) == t0)
        #expect(times.needsSave)
    }

    /// Saved, pruned at the acknowledged position and loaded again: the lines from that
    /// position on get the times they had, though the clock is an hour later; past the last
    /// saved base's span, lines get the clock's time again.
    @Test func linesReadAgainAfterARestartKeepTheirTimes() throws {
        let times = SourceTimes()
        let t0: Int64 = 1_800_000_000 * second
        var first: [Int64: Int64] = [:]
        for (index, offset) in stride(from: Int64(0), to: 2_000, by: 100).enumerated() {
            first[offset] = times.nanoseconds(of: a, at: offset, readAt: t0 + Int64(index) * 20_000_000)
        }
        #expect(Set(first.values).count == first.count)
        times.prune(a, below: 1_000)
        let saved = times.snapshot()
        #expect(!times.needsSave)
        #expect(saved.count == 1 && saved[0].bases.first.map { $0.start <= 1_000 } == true)
        // Through the state file's JSON, as a restart reads it.
        let state = SourceState(sources: [SourcePosition(source: a, path: "/a.log", offset: 1_000)], times: saved)
        let directory = try TemporaryDirectory()
        try state.save(to: directory.file("state"))
        let loaded = try #require(try SourceState.load(from: directory.file("state")))
        let again = SourceTimes(loaded: loaded.times ?? [])
        let hourLater = t0 + 3_600 * second
        for offset in stride(from: Int64(1_000), to: 2_000, by: 100) {
            #expect(again.nanoseconds(of: a, at: offset, readAt: hourLater) == first[offset], "offset \(offset)")
        }
        let beyond = 1_900 + SourceTimes.span
        #expect(again.nanoseconds(of: a, at: beyond, readAt: hourLater) == hourLater)
    }

    /// A file truncated and written again times its new lines by the clock: the bases of what it
    /// held before are dropped.
    @Test func aTruncatedFileGetsNewTimes() {
        let times = SourceTimes()
        let t0: Int64 = 1_800_000_000 * second
        #expect(times.nanoseconds(of: a, at: 0, readAt: t0) == t0)
        #expect(times.nanoseconds(of: a, at: 500, readAt: t0 + second) == t0 + second)
        #expect(times.nanoseconds(of: a, at: 0, readAt: t0 + 2 * second) == t0 + 2 * second)
        #expect(times.time(of: a, at: 500) == t0 + 2 * second + 500)
    }

    /// A file truncated while streamup was down and read from a point before its saved position:
    /// the saved bases are not used for its lines (they are new), so no new line takes the time,
    /// and so the name, of a line sent before.
    @Test func aFileTruncatedWhileDownIsNotTimedFromItsSavedBases() {
        let t0: Int64 = 1_800_000_000 * second
        let saved = [SourceTimes.Saved(source: a, bases: [SourceTimes.Base(start: 1_000, nanoseconds: t0)])]
        let times = SourceTimes(loaded: saved, positions: [SourcePosition(source: a, path: "/a.log", offset: 1_500)])
        let later = t0 + 3_600 * second
        #expect(times.nanoseconds(of: a, at: 1_200, readAt: later) == later)
        // Nor for its lines once it is past the saved position again.
        #expect(times.nanoseconds(of: a, at: 1_600, readAt: later + second) == later + second)
        // Without the truncation, a line from the saved position on keeps its time.
        let kept = SourceTimes(loaded: saved, positions: [SourcePosition(source: a, path: "/a.log", offset: 1_500)])
        #expect(kept.nanoseconds(of: a, at: 1_500, readAt: later) == t0 + 500)
    }

    /// On a container runtime's clock (`--parse`), the times in the lines are the same in every
    /// run, so the saved bases do not win over them: after a restart, a line an earlier run timed
    /// from a saved base gets that time again, and a line the runtime wrote an hour after it gets
    /// the runtime's time (read times keep the saved base's).
    @Test func aRuntimesClockOutrunsTheSavedBases() {
        let t0: Int64 = 1_800_000_000 * second
        let hour = 3_600 * second
        let saved = [SourceTimes.Saved(source: a, bases: [SourceTimes.Base(start: 1_000, nanoseconds: t0)])]
        let positions = [SourcePosition(source: a, path: "/a.log", offset: 1_500)]
        let runtime = SourceTimes(loaded: saved, positions: positions)
        #expect(runtime.nanoseconds(of: a, at: 1_500, writtenAt: t0 + 5_000_000) == t0 + 500)
        #expect(runtime.nanoseconds(of: a, at: 1_600, writtenAt: t0 + hour) == t0 + hour)
        #expect(runtime.nanoseconds(of: a, at: 1_700, writtenAt: t0 + hour) == t0 + hour + 100)
        let read = SourceTimes(loaded: saved, positions: positions)
        #expect(read.nanoseconds(of: a, at: 1_600, readAt: t0 + hour) == t0 + 600)
    }

    /// Records are named after their file, line offset, piece and time; a record outside the
    /// known entries, or of a line no base times, has no name (its stream offset names it).
    @Test func recordsAreNamedAfterTheirLines() {
        let times = SourceTimes()
        let t0: Int64 = 1_800_000_000 * second
        _ = times.nanoseconds(of: a, at: 40, readAt: t0)
        let entries = [
            SourceIndex.Entry(streamStart: 100, streamEnd: 150, source: a, start: 40, end: 60, verbatim: false),
            SourceIndex.Entry(streamStart: 150, streamEnd: 170, source: b, start: 0, end: 20, verbatim: true),
        ]
        let names = RecordNames(entries: entries, times: times)
        #expect(names.name(at: 100).map { String(decoding: $0, as: UTF8.self) } == "1-10-7-40-0-\(t0)")
        #expect(names.name(at: 125).map { String(decoding: $0, as: UTF8.self) } == "1-10-7-40-25-\(t0)")
        // No time for `b`: its record keeps the stream's name.
        #expect(names.name(at: 160) == nil)
        #expect(names.name(at: 170) == nil && names.name(at: 99) == nil)
    }

    /// A journal entry is named after its sequence and number alone, with no time base: the
    /// same name after a restart into a new stream, so Elasticsearch keeps one document.
    @Test func journalEntriesAreNamedAfterTheirSequenceNumbers() {
        let journal = SourceID.sequence("25542b9351e7442194bf7bafb90af8e5")
        let entries = [SourceIndex.Entry(streamStart: 0, streamEnd: 90, source: journal, start: 5000, end: 5001, verbatim: false)]
        let names = RecordNames(entries: entries, times: SourceTimes())
        #expect(names.name(at: 0).map { String(decoding: $0, as: UTF8.self) } == "\(journal.device)-\(journal.inode)-5000-0")
        #expect(names.name(at: 40).map { String(decoding: $0, as: UTF8.self) } == "\(journal.device)-\(journal.inode)-5000-40")
    }
}
