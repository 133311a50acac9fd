import StreamUpHTTP

/// What `streamup run` does with its pipelines, as a pure state machine: events (the file
/// loaded or reloaded, a stop signal, a pipeline that started or ended, time passing) return
/// the ``Action``s the ``RunSupervisor`` performs after unlocking. No task, process or clock of
/// its own: tests drive it on a manual clock.
///
/// Each pipeline of the file is a slot in one ``Phase``: waiting, starting, running, stopping,
/// or ended with its reason. Every copy of a pipeline that is started gets a number
/// (``Copy``), so the end of an earlier copy is never taken for the end of a later one. A copy a
/// reload removed or changed is *outgoing*: it delivers what it holds within its
/// `--shutdown-timeout`, then is aborted. A pipeline starts only once no other live copy has
/// its name, state file or spool (an outgoing one still holds them), so a pipeline removed and
/// put back, renamed, or changed starts the moment its earlier copy has let go.
///
/// A pipeline that ends is the group's decision, never an accident of timing (as in
/// swift-service-lifecycle's ServiceGroup): it stays in its slot as ended, with its reason,
/// until a reload restarts or removes it; `run` ends only when a stop signal asked for it and
/// every copy has ended, or when every pipeline has ended by itself (status 1 if one failed:
/// a service manager then restarts the whole). It never ends while a pipeline of the file waits
/// to start.
///
/// Alternatives considered: restarting a failed pipeline by itself after a backoff (runit,
/// Kubernetes) would hide a failure that needs a person (a missing directory, a 404 that no
/// retry fixes) behind a loop of lines, and a pipeline's own delivery already retries every
/// outage; so an ended pipeline stays ended and visible, and a reload or the service manager
/// (which restarts `run` once every pipeline has ended in failure) starts it again. Aborting the
/// old copy at once when a pipeline is put back would start the new one sooner, but loses what
/// the old one holds unless it has a spool: it is given its shutdown timeout as any stop is.
///
/// Thread safety: a value type, kept under the supervisor's lock.
struct RunSupervision<Instant: InstantProtocol> where Instant.Duration == Duration {
    typealias Pipeline = PipelineFile.Pipeline
    /// The number of one started copy of a pipeline.
    typealias Copy = Int

    /// Where one pipeline of the file is.
    ///
    /// Thread safety: a value type.
    enum Phase: Equatable {
        /// Not started: an earlier copy still holds its name, state file or spool.
        case waiting
        /// Its copy runs and makes its upload (claims its state and spool, opens its input).
        case starting(Copy)
        /// Its upload runs.
        case running(Copy)
        /// Asked to stop by a signal: it delivers what it holds until `deadline`, then it is
        /// aborted (`aborted`).
        case stopping(Copy, deadline: Instant, aborted: Bool)
        /// Ended, and why.
        case ended(End)
    }

    /// How a pipeline ended.
    ///
    /// Thread safety: a value type.
    enum End: Equatable {
        /// It could not start (its state directory is missing, …): the exit status it gave.
        case failedAtStart(status: Int32)
        /// It ended by itself while running (a 404, its input ended): status 0 or not.
        case ended(status: Int32)
        /// A stop signal stopped it: delivered within its timeout (status 0) or not.
        case stopped(status: Int32, aborted: Bool)

        var status: Int32 {
            switch self {
            case .failedAtStart(let status), .ended(let status), .stopped(let status, _): status
            }
        }

        /// Whether it is a failure an operator must see (`/health` answers 503 for it).
        var isFailure: Bool { status != 0 }
    }

    /// What the supervisor does, after unlocking.
    ///
    /// Thread safety: a value type.
    enum Action: Equatable {
        /// Start `pipeline` as copy `copy`; its task reports ``started(_:)`` and ``ended(_:status:now:)``.
        case start(Pipeline, Copy)
        /// Stop the copy as SIGTERM stops a command: deliver what it holds, then end.
        case stop(Copy)
        /// Abort the copy now (what a spool or a state file keeps is sent by the next start).
        case abort(Copy)
        /// Call ``tick(now:)`` at `instant`.
        case wake(at: Instant)
        /// One line on stderr, about the pipeline `pipeline` when given.
        case say(String, pipeline: String? = nil)
        /// A second stop signal: every copy is aborted and the process exits at once (130).
        case stopAtOnce(signal: String)
        /// `run` is over: exit with `status`.
        case finish(status: Int32)
    }

    /// One pipeline of the file.
    ///
    /// Thread safety: a value type.
    struct Slot: Equatable {
        var pipeline: Pipeline
        var phase: Phase
    }

    /// A copy a reload removed or replaced: it stops, and its slot is no longer its own.
    ///
    /// Thread safety: a value type.
    struct Outgoing: Equatable {
        var pipeline: Pipeline
        var deadline: Instant
        var aborted = false
    }

    /// Whether run supervises, stops (after the first stop signal), or has finished.
    ///
    /// Thread safety: a value type.
    private enum Mode: Equatable {
        case supervising
        case stopping(signal: String)
        case finished
    }

    private(set) var slots: [Slot] = []
    private(set) var outgoing: [Copy: Outgoing] = [:]
    private var mode = Mode.supervising
    private var nextCopy: Copy = 1
    /// Pipelines whose last copy failed (the exit status is 1 while any is here).
    private var failed: Set<String> = []

    init() {}

    // MARK: The file

    /// The file at start: every pipeline starts. (A signal can come first: after a SIGHUP it is
    /// a reload, after SIGINT/SIGTERM nothing starts.)
    mutating func load(_ file: PipelineFile, now: Instant) -> [Action] {
        guard slots.isEmpty && mode == .supervising else { return reload(file, now: now) }
        slots = file.pipelines.map { Slot(pipeline: $0, phase: .waiting) }
        let started = startWaiting()
        return [.say("started \(Self.listed(started.names))")] + started.actions
    }

    /// The file again (SIGHUP): unchanged pipelines go on, removed and changed ones stop, new
    /// ones (and the new copies of changed ones, and ended ones) start once nothing holds them.
    mutating func reload(_ file: PipelineFile, now: Instant) -> [Action] {
        guard mode == .supervising else { return [.say("reload ignored: stopping")] }
        var actions: [Action] = []
        var report = ReloadReport()
        var kept: [Slot] = []
        for pipeline in file.pipelines {
            guard let old = slots.first(where: { $0.pipeline.name == pipeline.name }) else {
                report.added.append(pipeline.name)
                kept.append(Slot(pipeline: pipeline, phase: .waiting))
                continue
            }
            let same = old.pipeline.isSame(as: pipeline)
            switch (old.phase, same) {
            case (.waiting, true), (.starting, true), (.running, true):
                report.unchanged += 1
                kept.append(old)
            case (.ended, true):
                report.restarted.append(pipeline.name)
                kept.append(Slot(pipeline: pipeline, phase: .waiting))
            case (.waiting, false), (.ended, false):
                report.changed.append(pipeline.name)
                kept.append(Slot(pipeline: pipeline, phase: .waiting))
            case (.starting(let copy), false), (.running(let copy), false):
                report.changed.append(pipeline.name)
                actions += retire(old.pipeline, copy, now: now)
                kept.append(Slot(pipeline: pipeline, phase: .waiting))
            case (.stopping, _):
                preconditionFailure("invalid state: a slot is stopping while run supervises: \(old)")
            }
        }
        for old in slots where !file.pipelines.contains(where: { $0.name == old.pipeline.name }) {
            report.removed.append(old.pipeline.name)
            switch old.phase {
            case .starting(let copy), .running(let copy): actions += retire(old.pipeline, copy, now: now)
            case .waiting, .ended: break
            case .stopping: preconditionFailure("invalid state: a slot is stopping while run supervises: \(old)")
            }
        }
        slots = kept
        let started = startWaiting()
        report.waiting = slots.filter { $0.phase == .waiting }.map(\.pipeline.name)
        return [.say(report.line)] + actions + started.actions
    }

    /// Moves a copy out of its slot: it stops, and is aborted at its deadline.
    private mutating func retire(_ pipeline: Pipeline, _ copy: Copy, now: Instant) -> [Action] {
        let deadline = now.advanced(by: pipeline.shutdownTimeout)
        outgoing[copy] = Outgoing(pipeline: pipeline, deadline: deadline)
        return [.stop(copy), .wake(at: deadline)]
    }

    // MARK: Copies

    /// The copy's upload runs.
    mutating func started(_ copy: Copy) -> [Action] {
        if let index = slots.firstIndex(where: { $0.phase == .starting(copy) }) { slots[index].phase = .running(copy) }
        // Else it was stopped or removed meanwhile: a stopping slot or an outgoing copy stays so.
        return []
    }

    /// The copy's task ended with `status`.
    mutating func ended(_ copy: Copy, status: Int32, now: Instant) -> [Action] {
        var actions: [Action] = []
        if let gone = outgoing.removeValue(forKey: copy) {
            if status != 0 { failed.insert(gone.pipeline.name) }
            if status != 0 && !gone.aborted { actions.append(.say("ended (exit status \(status)) while it stopped", pipeline: gone.pipeline.name)) }
        } else if let index = slots.firstIndex(where: { $0.phase.copy == copy }) {
            let name = slots[index].pipeline.name
            let end: End
            switch slots[index].phase {
            case .starting: end = status == 0 ? .ended(status: 0) : .failedAtStart(status: status)
            case .running: end = .ended(status: status)
            case .stopping(_, _, let aborted): end = .stopped(status: status, aborted: aborted)
            case .waiting, .ended: preconditionFailure("invalid state: copy \(copy) ended in \(slots[index].phase)")
            }
            slots[index].phase = .ended(end)
            if end.isFailure { failed.insert(name) }
            switch end {
            case .failedAtStart, .ended:
                guard end.isFailure else {
                    actions.append(.say("pipeline ended: its input ended and everything read was delivered", pipeline: name))
                    break
                }
                let others = slots.contains { $0.phase.isLive } ? "the others go on; " : ""
                actions.append(.say("pipeline ended (exit status \(end.status)); \(others)a reload (SIGHUP) starts it again", pipeline: name))
            case .stopped:
                break
            }
        } else {
            preconditionFailure("invalid state: copy \(copy) is not known")
        }
        // A copy that let go of a name, state file or spool may free a pipeline waiting for them.
        let started = startWaiting()
        for name in started.names { actions.append(.say("started: its earlier copy has let go of its state and spool", pipeline: name)) }
        return actions + started.actions + finishIfDone()
    }

    /// Time passed: copies past their stop deadline are aborted.
    mutating func tick(now: Instant) -> [Action] {
        var actions: [Action] = []
        for (copy, gone) in outgoing where !gone.aborted && gone.deadline <= now {
            outgoing[copy]?.aborted = true
            actions.append(.abort(copy))
        }
        for index in slots.indices {
            guard case .stopping(let copy, let deadline, false) = slots[index].phase, deadline <= now else { continue }
            slots[index].phase = .stopping(copy, deadline: deadline, aborted: true)
            actions.append(.abort(copy))
        }
        return actions.sorted { $0.copy ?? 0 < $1.copy ?? 0 }
    }

    // MARK: Signals

    /// SIGINT or SIGTERM (`signal`): the first stops every pipeline, a second stops at once.
    mutating func stopSignal(_ signal: String, now: Instant) -> [Action] {
        switch mode {
        case .stopping, .finished:
            return [.stopAtOnce(signal: signal)]
        case .supervising:
            mode = .stopping(signal: signal)
        }
        var actions: [Action] = []
        var stopping = 0
        var longest: Duration = .zero
        for index in slots.indices {
            switch slots[index].phase {
            case .starting(let copy), .running(let copy):
                let timeout = slots[index].pipeline.shutdownTimeout
                let deadline = now.advanced(by: timeout)
                slots[index].phase = .stopping(copy, deadline: deadline, aborted: false)
                actions += [.stop(copy), .wake(at: deadline)]
                stopping += 1
                longest = max(longest, timeout)
            case .waiting:
                // It never started: nothing of it to deliver.
                slots[index].phase = .ended(.stopped(status: 0, aborted: false))
            case .ended:
                break
            case .stopping:
                preconditionFailure("invalid state: a slot is stopping while run supervises: \(slots[index])")
            }
        }
        stopping += outgoing.count
        let what =
            stopping == 0
            ? "no pipeline runs" : "\(counted(stopping, "pipeline")) deliver what they hold, waiting at most \(UploadRunner.short(longest))"
        return [.say("stopping (\(signal)): \(what) \(SignalHandling.secondStops)")] + actions + finishIfDone()
    }

    // MARK: Reading

    /// The pipelines whose last copy failed, and how: what `/health` names.
    var failures: [(name: String, end: End)] {
        slots.compactMap { slot in
            guard case .ended(let end) = slot.phase, end.isFailure else { return nil }
            return (slot.pipeline.name, end)
        }
    }

    /// The exit status if `run` ended now: 1 once a pipeline's last copy failed, else 0.
    var status: Int32 { failed.isEmpty ? 0 : 1 }

    // MARK: Starting and finishing

    /// Starts every waiting pipeline that nothing holds.
    private mutating func startWaiting() -> (names: [String], actions: [Action]) {
        guard mode == .supervising else { return ([], []) }
        var names: [String] = []
        var actions: [Action] = []
        for index in slots.indices where slots[index].phase == .waiting && !isHeld(slots[index].pipeline) {
            let copy = nextCopy
            nextCopy += 1
            slots[index].phase = .starting(copy)
            failed.remove(slots[index].pipeline.name)
            names.append(slots[index].pipeline.name)
            actions.append(.start(slots[index].pipeline, copy))
        }
        return (names, actions)
    }

    /// Whether another live copy has `pipeline`'s name, state file or spool.
    private func isHeld(_ pipeline: Pipeline) -> Bool {
        let files = Set(pipeline.ownFiles)
        let holders = outgoing.values.map(\.pipeline) + slots.filter { $0.phase.isLive && $0.pipeline.name != pipeline.name }.map(\.pipeline)
        return holders.contains { $0.name == pipeline.name || !files.isDisjoint(with: $0.ownFiles) }
    }

    /// `.finish` once nothing runs, starts or waits any more (and a stop asked for it, or every
    /// pipeline ended by itself).
    private mutating func finishIfDone() -> [Action] {
        guard mode != .finished, outgoing.isEmpty, !slots.contains(where: { $0.phase.isLive || $0.phase == .waiting }) else { return [] }
        mode = .finished
        return [.finish(status: status)]
    }

    /// `a, b and c`.
    static func listed(_ names: [String]) -> String {
        guard let last = names.last else { return "no pipeline" }
        return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " and " + last
    }
}

extension RunSupervision.Phase {
    /// The copy of a phase that has one.
    var copy: RunSupervision.Copy? {
        switch self {
        case .starting(let copy), .running(let copy), .stopping(let copy, _, _): copy
        case .waiting, .ended: nil
        }
    }

    /// Whether a copy of it runs (starting, running or stopping).
    var isLive: Bool { copy != nil }
}

extension RunSupervision.Action {
    /// The copy an action is about, for ordering.
    var copy: RunSupervision.Copy? {
        switch self {
        case .stop(let copy), .abort(let copy), .start(_, let copy): copy
        case .wake, .say, .stopAtOnce, .finish: nil
        }
    }
}
