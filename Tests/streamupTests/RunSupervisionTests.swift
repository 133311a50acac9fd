import Foundation
import StreamUpTestSupport
import Testing

@testable import streamup

/// The supervision of `streamup run` on a manual clock, without tasks or processes: which
/// pipelines start, stop, wait and end for each event, and when `run` ends with what status.
/// Each test takes microseconds.
@Suite struct RunSupervisionTests {
    typealias Machine = RunSupervision<ManualClock.Instant>
    let clock = ManualClock()

    /// The pipelines of `text` (each line needs only what the machine reads: name, words,
    /// state and spool, shutdown timeout).
    private func file(_ text: String) throws -> PipelineFile {
        try PipelineFile.parse(text, environment: [:])
    }

    private let a = "tail --name a --state /s/a --shutdown-timeout 2s /a.log http://h/\n"
    private let b = "tail --name b /b.log http://h/\n"

    /// The copies `actions` start, by pipeline name.
    private func started(_ actions: [Machine.Action]) -> [String: Int] {
        Dictionary(
            uniqueKeysWithValues: actions.compactMap { action in
                if case .start(let pipeline, let copy) = action { (pipeline.name, copy) } else { nil }
            })
    }

    private func said(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { action in
            guard case .say(let line, let pipeline) = action else { return nil }
            return pipeline.map { "\($0): \(line)" } ?? line
        }
    }

    private func finished(_ actions: [Machine.Action]) -> Int32? {
        actions.lazy.compactMap { action in if case .finish(let status) = action { status } else { nil } }.first
    }

    /// Every pipeline of the file starts, in one line naming them all.
    @Test func theFileStartsEveryPipelineInOneLine() throws {
        var machine = Machine()
        let actions = machine.load(try file(a + b), now: clock.now)
        #expect(started(actions) == ["a": 1, "b": 2])
        #expect(said(actions) == ["started a and b"])
    }

    /// A pipeline that fails at start, even before the others have started, ends alone: it is
    /// named as failed, the others go on, and `run` does not end (it used to end when the
    /// failing line was first: the pipelines still starting were not counted yet).
    @Test func aPipelineFailingAtStartNeverEndsRun() throws {
        var machine = Machine()
        let copies = started(machine.load(try file(a + b), now: clock.now))
        let ended = machine.ended(try #require(copies["a"]), status: ExitStatus.usage, now: clock.now)
        #expect(finished(ended) == nil)
        #expect(said(ended) == ["a: pipeline ended (exit status 64); the others go on; a reload (SIGHUP) starts it again"])
        #expect(machine.failures.map(\.name) == ["a"])
        #expect(machine.failures.first?.end == .failedAtStart(status: 64))
        #expect(machine.started(try #require(copies["b"])).isEmpty)
        #expect(machine.slots.map(\.phase) == [.ended(.failedAtStart(status: 64)), .running(2)])
    }

    /// A pipeline removed while its receiver is down, then put back before its old copy has
    /// stopped: the new copy waits, starts the moment the old one (aborted at its shutdown
    /// timeout) has ended, and `run` never ends meanwhile.
    @Test func aPipelinePutBackStartsOnceItsOldCopyHasLetGo() throws {
        var machine = Machine()
        _ = machine.load(try file(a + b), now: clock.now)
        _ = machine.started(1)
        let removed = machine.reload(try file(b), now: clock.now)
        #expect(removed.contains(.stop(1)) && removed.contains(.wake(at: clock.now.advanced(by: .seconds(2)))))
        #expect(said(removed) == ["reloaded: stopped a; 1 unchanged"])
        clock.advance(by: .seconds(1))
        let back = machine.reload(try file(a + b), now: clock.now)
        #expect(started(back).isEmpty, "the old copy still holds a's state file")
        #expect(said(back) == ["reloaded: started a (once the earlier copy has let go of its state and spool); 1 unchanged"])
        clock.advance(by: .seconds(1))
        #expect(machine.tick(now: clock.now) == [.abort(1)])
        let ended = machine.ended(1, status: ExitStatus.noAnswer, now: clock.now)
        #expect(started(ended) == ["a": 3])
        #expect(said(ended) == ["a: started: its earlier copy has let go of its state and spool"])
        #expect(finished(ended) == nil)
        // The new copy runs, so the old one's failure no longer counts.
        _ = machine.started(3)
        #expect(machine.status == 0)
    }

    /// A pipeline renamed (or changed) keeps waiting while a copy under another name still
    /// holds its state file: two copies never claim one state file or spool.
    @Test func aRenamedPipelineWaitsForTheCopyThatHoldsItsStateFile() throws {
        var machine = Machine()
        _ = machine.load(try file(a), now: clock.now)
        let renamed = machine.reload(try file(a.replacingOccurrences(of: "--name a", with: "--name renamed")), now: clock.now)
        #expect(renamed.contains(.stop(1)) && started(renamed).isEmpty)
        #expect(said(renamed) == ["reloaded: started renamed (once the earlier copy has let go of its state and spool); stopped a"])
        #expect(started(machine.ended(1, status: 0, now: clock.now)) == ["renamed": 2])
        let changed = machine.reload(
            try file(a.replacingOccurrences(of: "--name a", with: "--name renamed").replacingOccurrences(of: "http://h/", with: "http://g/")), now: clock.now)
        #expect(changed.contains(.stop(2)) && started(changed).isEmpty)
        #expect(said(changed) == ["reloaded: changed renamed (once the earlier copy has let go of its state and spool)"])
    }

    /// A reload of the same pipelines (a comment added, lines moved) changes nothing: no copy
    /// stops or starts.
    @Test func aReloadOfTheSamePipelinesTouchesNothing() throws {
        var machine = Machine()
        _ = machine.load(try file(a + b), now: clock.now)
        let again = machine.reload(try file("# a comment\n\n" + b + a), now: clock.now)
        #expect(again == [.say("reloaded: nothing changed (2 pipelines unchanged)")])
    }

    /// An ended pipeline stays in its slot, failed, until a reload starts it again.
    @Test func aReloadRestartsAnEndedPipeline() throws {
        var machine = Machine()
        _ = machine.load(try file(a + b), now: clock.now)
        _ = machine.ended(1, status: ExitStatus.ioFailure, now: clock.now)
        #expect(machine.status == 1)
        let reloaded = machine.reload(try file(a + b), now: clock.now)
        #expect(started(reloaded) == ["a": 3])
        #expect(said(reloaded) == ["reloaded: restarted a; 1 unchanged"])
        #expect(machine.failures.isEmpty && machine.status == 0)
    }

    /// SIGTERM stops every copy (each aborted at its own shutdown timeout) and `run` ends once
    /// all have ended: 0 when each delivered what it held, 1 when one was aborted; a second
    /// SIGTERM stops at once.
    @Test func aStopSignalStopsEveryPipelineAndEndsRunWhenAllHaveEnded() throws {
        var machine = Machine()
        _ = machine.load(try file(a + b), now: clock.now)
        let stopping = machine.stopSignal("SIGTERM", now: clock.now)
        #expect(stopping.contains(.stop(1)) && stopping.contains(.stop(2)))
        #expect(said(stopping) == ["stopping (SIGTERM): 2 pipelines deliver what they hold, waiting at most 30s (a second SIGINT/SIGTERM stops at once)"])
        #expect(machine.reload(try file(a), now: clock.now) == [.say("reload ignored: stopping")])
        clock.advance(by: .seconds(2))
        #expect(machine.tick(now: clock.now) == [.abort(1)])
        #expect(finished(machine.ended(2, status: 0, now: clock.now)) == nil)
        #expect(finished(machine.ended(1, status: ExitStatus.noAnswer, now: clock.now)) == 1)
        #expect(machine.stopSignal("SIGTERM", now: clock.now) == [.stopAtOnce(signal: "SIGTERM")])

        var clean = Machine()
        _ = clean.load(try file(b), now: clock.now)
        _ = clean.stopSignal("SIGINT", now: clock.now)
        #expect(finished(clean.ended(1, status: 0, now: clock.now)) == 0)
    }

    /// A stop asked for while a copy waits for an earlier one: the waiting one never starts,
    /// and `run` ends once the earlier copy has.
    @Test func aStopEndsAWaitingPipelineBeforeItStarts() throws {
        var machine = Machine()
        _ = machine.load(try file(a), now: clock.now)
        _ = machine.reload(try file(b), now: clock.now)
        _ = machine.reload(try file(a + b), now: clock.now)
        let stopping = machine.stopSignal("SIGTERM", now: clock.now)
        #expect(started(stopping).isEmpty)
        let over = machine.ended(1, status: 0, now: clock.now) + machine.ended(2, status: 0, now: clock.now)
        #expect(started(over).isEmpty && finished(over) == 0)
    }

    /// `run` ends by itself only once every pipeline has ended by itself: with status 1 when
    /// one failed (a service manager restarts it), 0 when each delivered all its input.
    @Test func runEndsOnlyWhenEveryPipelineHasEnded() throws {
        var machine = Machine()
        _ = machine.load(try file(a + b), now: clock.now)
        #expect(finished(machine.ended(2, status: 0, now: clock.now)) == nil)
        #expect(
            said(machine.ended(1, status: ExitStatus.httpFailure, now: clock.now)) == [
                "a: pipeline ended (exit status 1); a reload (SIGHUP) starts it again"
            ])
        var done = Machine()
        _ = done.load(try file(b), now: clock.now)
        _ = done.started(1)
        let ended = done.ended(1, status: 0, now: clock.now)
        #expect(finished(ended) == 0)
        #expect(said(ended) == ["b: pipeline ended: its input ended and everything read was delivered"])
    }

    /// Signals before the file is loaded: a SIGHUP first makes the load a reload (nothing twice),
    /// a SIGTERM first ends `run` before anything starts.
    @Test func aSignalBeforeTheLoadIsTakenInOrder() throws {
        var reloaded = Machine()
        #expect(started(reloaded.reload(try file(a + b), now: clock.now)) == ["a": 1, "b": 2])
        #expect(reloaded.load(try file(a + b), now: clock.now) == [.say("reloaded: nothing changed (2 pipelines unchanged)")])
        var stopped = Machine()
        #expect(finished(stopped.stopSignal("SIGTERM", now: clock.now)) == 0)
        #expect(started(stopped.load(try file(a + b), now: clock.now)).isEmpty)
    }
}
