import Testing

@testable import StreamUpTail

/// The scheduler as a pure value: who reads next, and who keeps a descriptor.
@Suite struct TailSchedulerTests {
    /// Runs `turns` turns; a file in `busy` always has more (it is put back after its turn).
    private func serve(_ scheduler: inout TailScheduler<String>, turns: Int, busy: Set<String>) -> [String] {
        var order: [String] = []
        for _ in 0..<turns {
            guard let next = scheduler.nextTurn() else { break }
            order.append(next)
            if busy.contains(next) { scheduler.markReady(next) }
        }
        return order
    }

    /// A file that always has more cannot starve one that has a single line: the quiet file,
    /// ready while the busy one reads, gets the very next turn after the busy one's.
    @Test func aBusyFileCannotStarveAQuietOne() {
        var scheduler = TailScheduler<String>(maxOpen: 10)
        scheduler.markReady("busy")
        // Given the busy file reading turn after turn,
        #expect(serve(&scheduler, turns: 5, busy: ["busy"]) == ["busy", "busy", "busy", "busy", "busy"])
        // when the quiet file has a line,
        scheduler.markReady("quiet")
        // then it reads after at most one more turn of the busy file, and the busy one goes on.
        let order = serve(&scheduler, turns: 4, busy: ["busy"])
        #expect(order == ["busy", "quiet", "busy", "busy"])
    }

    /// Files that all have more read in a fixed rotation: each gets exactly one turn per round.
    @Test func busyFilesShareTurnsEqually() {
        var scheduler = TailScheduler<String>(maxOpen: 10)
        let names = (0..<5).map { "f\($0)" }
        for name in names { scheduler.markReady(name) }
        let order = serve(&scheduler, turns: 50, busy: Set(names))
        for round in stride(from: 0, to: 50, by: 5) {
            #expect(Set(order[round..<round + 5]) == Set(names), "round \(round / 5): \(order[round..<round + 5])")
        }
        #expect(Dictionary(grouping: order, by: { $0 }).mapValues(\.count) == Dictionary(uniqueKeysWithValues: names.map { ($0, 10) }))
    }

    /// Marking a file ready twice queues it once; a removed file gets no turn.
    @Test func readyIsASetAndRemovedFilesAreGone() {
        var scheduler = TailScheduler<String>(maxOpen: 10)
        scheduler.markReady("a")
        scheduler.markReady("b")
        scheduler.markReady("a")
        scheduler.remove("b")
        #expect(serve(&scheduler, turns: 5, busy: []) == ["a"])
        #expect(scheduler.hasReady == false)
    }

    /// Beyond the limit, the least recently written open file with nothing to read is closed
    /// for the newcomer; files with lines waiting, and files that may not be closed, keep
    /// theirs; with none to close, the newcomer waits.
    @Test func theLeastRecentlyWrittenIdleFileGivesUpItsDescriptor() {
        var scheduler = TailScheduler<String>(maxOpen: 3)
        for name in ["a", "b", "c"] { #expect(scheduler.requestSlot(for: name) { _ in true } == .open) }
        scheduler.wrote("a")  // order of writes: b, c, a
        // b is the least recently written, and idle: it is closed for d.
        #expect(scheduler.requestSlot(for: "d") { _ in true } == .openAfterClosing("b"))
        #expect(scheduler.isOpen("b") == false && scheduler.isOpen("d"))
        // c has lines waiting and a may not be closed: d, though the newest, is the only one
        // that can make room for e.
        scheduler.markReady("c")
        #expect(scheduler.requestSlot(for: "e") { $0 != "a" } == .openAfterClosing("d"))
        // Now every open file is either ready (c) or pinned (a, e): f waits.
        scheduler.markReady("e")
        #expect(scheduler.requestSlot(for: "f") { $0 != "a" } == .wait)
        #expect(scheduler.openCount == 3)
    }
}
