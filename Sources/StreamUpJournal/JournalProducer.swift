import Foundation
import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The systemd journal as a producer: runs `journalctl --follow --output=export` and makes each
/// entry records (``JournalRecords``), each marked with the entry's place in its sequence, so
/// that the uploader's state file keeps where every sequence stands (``JournalStart``).
///
/// Why a `journalctl` child and not libsystemd: journalctl is on every systemd host, reads
/// every journal file version its own systemd writes, and needs no library or header at build
/// time (the static binary keeps running where libsystemd differs); its export output carries
/// each entry's cursor and every field whole.
///
/// Where it starts: after the saved positions (``resume(from:)``); on a first run at the
/// journal's end (the last entry's cursor is asked for first, and reported as the position at
/// once, so a run killed before any acknowledgement still goes on from there), or at its start
/// (`fromStart`). The first entry of a sequence it meets is reported as that sequence's
/// position too (``PositionedProducer/reportSources(to:)``): the state file knows every
/// sequence before any of its entries is acknowledged.
///
/// Thread safety: what other threads see (the saved positions, the report closure, the
/// cursors read) is guarded by the `shared` mutex; `produce` runs journalctl and reads its
/// output on the writer's blocking thread.
package final class JournalProducer: PositionedProducer, Sendable {
    /// Starts `process` as the command `arguments` (`journalctl` and its options).
    package typealias Spawn = @Sendable (_ process: Process, _ arguments: [String]) throws -> Void

    /// Runs the command through `/usr/bin/env` (which finds `journalctl` on `PATH`).
    package static let plainSpawn: Spawn = { process, arguments in
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        try process.run()
    }

    package let selection: JournalSelection
    /// Where a first run starts: the journal's start, or its end (new entries only).
    package let fromStart: Bool
    package let records: JournalRecords
    private let spawn: Spawn
    private let onNotice: @Sendable (String) -> Void

    /// What other threads see of the producer.
    ///
    /// Thread safety: a value type, kept in the `shared` mutex.
    private struct Shared {
        var saved: [SourcePosition] = []
        var report: (@Sendable (SourceChange) -> Void)?
        var checkpoints = JournalCheckpoints()
        var child: Process?
        var stopped = false
    }
    private let shared = Mutex(Shared())

    /// - Parameters:
    ///   - spawn: how journalctl is started (the command-line tool's makes it end with streamup).
    ///   - onNotice: one line about the journal: a saved position it could not use, or one not
    ///     in the journal.
    package init(
        selection: JournalSelection, fromStart: Bool, records: JournalRecords, spawn: @escaping Spawn = plainSpawn,
        onNotice: @escaping @Sendable (String) -> Void
    ) {
        self.selection = selection
        self.fromStart = fromStart
        self.records = records
        self.spawn = spawn
        self.onNotice = onNotice
    }

    // MARK: Positions

    package func resume(from positions: [SourcePosition], savedAt: Date?) {
        shared.withLock { $0.saved = positions }
    }

    package func reportSources(to report: @escaping @Sendable (SourceChange) -> Void) {
        shared.withLock { $0.report = report }
    }

    /// A sequence has no path of its own; its positions are saved with cursors (``path(of:at:)``).
    package func path(of source: SourceID) -> String? { nil }

    /// The cursor of the newest entry read before `position`, where journalctl starts again.
    package func path(of source: SourceID, at position: Int64) -> String? {
        shared.withLock { $0.checkpoints.cursor(of: source, before: position) }
    }

    // MARK: Producing

    package func produce(into writer: StreamWriter) async throws {
        let (saved, report) = shared.withLock { ($0.saved, $0.report) }
        let plan = JournalStart.plan(saved: saved, fromStart: fromStart)
        for note in plan.notes { onNotice(note) }
        try await withTaskCancellationHandler {
            try await writer.runBlocking { [self] blocking in
                var start = plan
                if start.seek == .tail {
                    if let last = try lastEntry() {
                        start.seek = .cursor(last)
                        start.next[last.source] = last.seqnum + 1
                        report?(.following(SourcePosition(source: last.source, path: last.text, offset: last.seqnum + 1)))
                    } else {
                        start.seek = .head
                    }
                }
                guard !shared.withLock({ $0.stopped }) else { return }
                try follow(from: start, into: blocking, report: report)
            }
        } onCancel: {
            let child = shared.withLock { shared in
                shared.stopped = true
                return shared.child
            }
            child?.terminate()
        }
    }

    /// The cursor of the last entry selected, nil when there is none.
    private func lastEntry() throws -> JournalCursor? {
        var reader = JournalExportReader()
        var last: JournalCursor?
        try run(selection.lastEntryArguments) { bytes in
            reader.take(bytes) { last = $0.cursor }
        }
        return last
    }

    /// Follows the journal from `start`, writing the records of the entries not sent before.
    private func follow(from start: JournalStart, into writer: BlockingStreamWriter, report: (@Sendable (SourceChange) -> Void)?) throws {
        var reader = JournalExportReader()
        var known = Set(start.next.keys)
        var start = start
        try run(selection.followArguments(from: start.seek)) { bytes in
            try reader.take(bytes) { entry in
                if let line = start.check(entry.cursor) { onNotice(line) }
                guard !start.wasSent(entry.cursor) else { return }
                if known.insert(entry.cursor.source).inserted {
                    report?(.following(SourcePosition(source: entry.cursor.source, path: entry.cursor.text, offset: entry.cursor.seqnum)))
                }
                shared.withLock { $0.checkpoints.add(entry.cursor) }
                let mark = entry.mark
                let wrote = try records.records(of: entry) { try writer.write($0, mark: mark) }
                if !wrote { writer.skip(mark) }
            }
        }
    }

    /// Runs the journalctl command `arguments`, handing its output to `consume` as it comes;
    /// throws when it ended by itself (a follower), failed, or could not start. Returns when
    /// streamup stopped it (``produce(into:)`` was cancelled).
    private func run(_ arguments: [String], _ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        let child = Process()
        let output = Pipe()
        child.standardOutput = output
        child.standardInput = FileHandle.nullDevice
        do {
            try spawn(child, arguments)
        } catch {
            throw StreamUpError(.producerFailed, JournalctlEnd.cannotStart(error))
        }
        let stoppedAlready = shared.withLock { shared in
            shared.child = child
            return shared.stopped
        }
        if stoppedAlready { child.terminate() }
        defer {
            try? output.fileHandleForReading.close()
            if child.isRunning { child.terminate() }
            child.waitUntilExit()
            shared.withLock { $0.child = nil }
        }
        let descriptor = output.fileHandleForReading.fileDescriptor
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            try chunk.withUnsafeBytes { try consume(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        child.waitUntilExit()
        // Stopped by streamup (the upload ends): nothing more to read, nothing went wrong.
        guard !shared.withLock({ $0.stopped }) else { return }
        let signaled = child.terminationReason == .uncaughtSignal
        guard signaled || child.terminationStatus != 0 || arguments.contains("--follow") else { return }
        throw StreamUpError(.producerFailed, JournalctlEnd.line(status: child.terminationStatus, signaled: signaled))
    }
}
