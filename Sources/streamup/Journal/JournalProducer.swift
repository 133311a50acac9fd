import Foundation
import StreamUp
import StreamUpSystem

/// The systemd journal as a producer: runs `journalctl --follow --output=json` and makes each
/// entry one record (``JournalEntry``), marked with its place in the journal so the uploader's
/// state file keeps the cursor of what the receiver acknowledged.
///
/// Why a `journalctl` child and not libsystemd: journalctl is on every systemd host, reads
/// every journal file version its own systemd writes, and needs no library or header at build
/// time (the static binary keeps running where libsystemd differs); its JSON output carries the
/// cursor of each entry, which is all exactly-once needs.
///
/// Positions: entries carry a cursor `s=SEQNUM_ID;i=SEQNUM;…`. Each sequence-number ID is one
/// source (``SourceID`` from its text), each entry the source range `SEQNUM..<SEQNUM+1`, and the
/// source's path is `s=SEQNUM_ID`: a saved offset N is the cursor `s=SEQNUM_ID;i=N-1`, which
/// `journalctl --after-cursor` accepts, so a restart continues after the last entry
/// acknowledged.
///
/// Thread safety: the resume cursor is a `Mutex`; `produce` runs the child and reads its output
/// on the writer's blocking thread.
final class JournalProducer: PositionedProducer, Sendable {
    /// `journalctl` and the arguments that select entries (directory, units, priority).
    let selection: [String]
    /// Where to start without a saved cursor: the journal's start, or new entries only.
    let fromStart: Bool
    /// How an entry becomes a record's bytes (made per set of fields; nil: the raw message).
    let records: JournalRecords
    private let resumeCursor = Mutex<String?>(nil)
    /// Called with one line when the child cannot run or ends by itself.
    let onProblem: @Sendable (String) -> Void

    init(selection: [String], fromStart: Bool, records: JournalRecords, onProblem: @escaping @Sendable (String) -> Void) {
        self.selection = selection
        self.fromStart = fromStart
        self.records = records
        self.onProblem = onProblem
    }

    // MARK: Positions

    /// The marker in ``SourceID/device`` of a journal source ("jrnl").
    static let device: UInt64 = 0x6a72_6e6c

    /// The source of the entries of sequence-number ID `seqnumID`.
    static func source(_ seqnumID: String) -> SourceID {
        // FNV-1a: stable across runs (Swift's hashValue is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seqnumID.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return SourceID(device: device, inode: hash)
    }

    func resume(from positions: [SourcePosition]) {
        guard let last = positions.last(where: { $0.source.device == Self.device && $0.path.hasPrefix("s=") && $0.offset > 0 }) else { return }
        resumeCursor.withLock { $0 = "\(last.path);i=\(String(last.offset - 1, radix: 16))" }
    }

    func path(of source: SourceID) -> String? {
        records.seqnumIDs.withLock { $0[source] }.map { "s=\($0)" }
    }

    /// The journalctl command line: follow, JSON, every field whole; after the saved cursor,
    /// from the start, or from now.
    var arguments: [String] {
        var arguments = selection + ["--follow", "--output=json", "--all", "--no-pager", "--quiet"]
        if let cursor = resumeCursor.withLock({ $0 }) {
            arguments += ["--after-cursor", cursor, "--no-tail"]
        } else {
            arguments += fromStart ? ["--no-tail"] : ["--lines=0"]
        }
        return arguments
    }

    // MARK: Producing

    func produce(into writer: StreamWriter) async throws {
        let child = Process()
        let output = Pipe()
        child.standardOutput = output
        child.standardInput = FileHandle.nullDevice
        do {
            // Through the shim: a streamup killed outright takes journalctl with it.
            try ExecShim.run(child, executable: "/usr/bin/env", arguments: arguments)
        } catch {
            throw StreamUpError(.producerFailed, "cannot run journalctl: \(error)")
        }
        let stopped = Mutex(false)
        let descriptor = output.fileHandleForReading.fileDescriptor
        let records = records
        try await withTaskCancellationHandler {
            try await writer.runBlocking { blocking in
                defer { try? output.fileHandleForReading.close() }
                var reader = JournalLineReader()
                var chunk = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    for line in chunk.withUnsafeBytes({ reader.take(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) {
                        guard let entry = JournalEntry(json: line) else { continue }
                        let (bytes, mark) = records.record(of: entry)
                        if bytes.isEmpty, let mark {
                            blocking.skip(mark)
                        } else {
                            try blocking.write(bytes, mark: mark)
                        }
                    }
                }
            }
        } onCancel: {
            stopped.withLock { $0 = true }
            child.terminate()
        }
        if child.isRunning { child.terminate() }
        child.waitUntilExit()
        if !stopped.withLock({ $0 }) {
            throw StreamUpError(.producerFailed, "journalctl ended (exit status \(child.terminationStatus)); see the line it wrote above")
        }
    }
}
