import Foundation
import StreamUpTestSupport
import Testing

/// `--to loki` into the Loki validator, which drops an entry whose stream, time and line equal
/// one it holds (as Loki does): a resent record carries the time it got when it entered the
/// buffer (the spool keeps it; without one, the state file keeps the times of what may have
/// been sent), so a resend after a lost answer or a `kill -9` is dropped. And `--to
/// elasticsearch`, whose validator answers 409 to a `create` of an `_id` it holds.
///
/// Long set (about 200 s): the command matrix's lost-answer rows (`--segment-bytes 64`, with
/// and without `--state`, into Loki, Elasticsearch and OpenSearch) show the resends dropped,
/// `TailCommandTests.restartWithStateContinuesAfterTheAcknowledgedOffset` the restart, and
/// `ContainerLogTests.recordsReadAgainFromASavedPositionKeepTheirTimesAndNames` the times and names.
@Suite(.long, .timeLimit(.minutes(5))) struct LokiExactlyOnceTests {
    /// `tail --state --spool`, killed with SIGKILL three times while the file grows, with every
    /// third answer lost: every line is one entry.
    @Test func killedTailStoresEveryLineOnce() async throws {
        try await killThreeTimes(spooled: true, into: "loki")
    }

    /// `tail --state` with no spool, killed with SIGKILL three times while the file grows, with
    /// every third answer lost: the lines read again from the saved positions (sent, their
    /// answers lost or not yet come) get the times they were sent with, so Loki drops them.
    @Test func killedTailWithoutSpoolStoresEveryLineOnce() async throws {
        try await killThreeTimes(spooled: false, into: "loki")
    }

    /// `tail --state` with no spool, into Elasticsearch's `_bulk` with every third answer lost
    /// and three SIGKILLs: the lines read again get the `_id`s they were sent with, so each
    /// resend is answered 409 and stored once.
    @Test func killedTailWithoutSpoolStoresEveryDocumentOnce() async throws {
        try await killThreeTimes(spooled: false, into: "elasticsearch")
    }

    /// `tail --parse cri|docker --state` with no spool, killed three times with answers lost,
    /// lines of one millisecond by the runtime's clock (and some written in pieces): a record's
    /// time comes from the runtime's and its source offset, and its `_id` from its first line,
    /// so the records read again are the ones sent before, to the byte, and stored once.
    @Test(arguments: [("cri", "loki"), ("cri", "elasticsearch"), ("docker", "loki")])
    func killedContainerLogTailWithoutSpoolStoresEveryRecordOnce(parse: String, into kind: String) async throws {
        try await killThreeTimes(spooled: false, into: kind, parse: parse)
    }

    /// Runs `tail --state FILE` (and `--spool` when `spooled`, `--parse` a container runtime's
    /// lines when `parse` names one) into the validator of `kind`, which loses every third
    /// answer; kills it three times while the file grows; then expects every line stored exactly
    /// once.
    private func killThreeTimes(spooled: Bool, into kind: String, parse: String? = nil) async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.file("app.log")
        let total = 6_000
        try await ReceiverValidator.with(kind, ["--lose-answers", "3"]) { receiver in
            _ = FileManager.default.createFile(atPath: file, contents: nil)
            let spool = spooled ? ["--spool", scratch.file("spool")] : []
            let parsing = parse.map { ["--parse", $0] } ?? []
            let arguments =
                ["tail", "--from-start", "--state", scratch.file("state.json")] + spool + parsing + [
                    "--segment-bytes", "4k", "--segment-seconds", "50ms", file, "--to", kind, receiver.url.absoluteString,
                ]
            let written = Locked(0)
            // Appends the next `lines` lines (up to `total`).
            let grow: @Sendable (Int) -> Void = { lines in
                written.withLock { written in
                    let next = min(total, written + lines)
                    guard next > written, let writer = FileHandle(forWritingAtPath: file) else { return }
                    writer.seekToEndOfFile()
                    writer.write(Data(((written + 1)...next).map { Self.line($0, parse: parse) }.joined().utf8))
                    writer.closeFile()
                    written = next
                }
            }
            var child = try StreamupProcess(arguments)
            defer { child.signal(SIGKILL) }
            for round in 1...3 {
                let target = round * 1_500
                let reached = await onOwnThread {
                    poll(within: .seconds(60)) { () -> Bool? in
                        grow(20)
                        return (receiver.count()?.records ?? 0) >= target ? true : nil
                    }
                }
                #expect(reached == true, "round \(round): \(child.stderr.suffix(1_000))")
                child.signal(SIGKILL)
                _ = await child.waitForExit(timeout: 30)
                child = try StreamupProcess(arguments)
            }
            grow(total)
            let all = await onOwnThread { poll(within: .seconds(90)) { (receiver.count()?.records ?? 0) >= total ? true : nil } }
            child.signal(SIGTERM)
            #expect(await child.waitForExit(timeout: 60) == 0, "stderr: \(child.stderr.suffix(2_000))")
            #expect(all == true)
            let snapshot = try await receiver.snapshot()
            #expect(snapshot.lines.count == total && Set(snapshot.text).count == total, "\(snapshot.lines.count) entries, \(Set(snapshot.text).count) distinct")
            #expect(snapshot.errors.isEmpty && snapshot.rejectedLines.isEmpty, "\(snapshot.errors.prefix(3))")
        }
    }

    /// Line `number` of the file, whose record is `grow-NNNNNN`: plain, or as the runtime of
    /// `parse` writes it, 137 µs after the line before by its clock (several lines in one
    /// millisecond); every 50th line in three pieces (CRI `P`, `P`, `F`; Docker without `\n`).
    private static func line(_ number: Int, parse: String?) -> String {
        let message = String(format: "grow-%06d", number)
        guard let parse else { return message + "\n" }
        let nanoseconds = number * 137_000
        let time = String(format: "2026-11-25T10:%02d:%02d.%09dZ", nanoseconds / 60_000_000_000, nanoseconds / 1_000_000_000 % 60, nanoseconds % 1_000_000_000)
        let pieces = number % 50 == 0 ? [String(message.prefix(3)), String(message.dropFirst(3).prefix(3)), String(message.dropFirst(6))] : [message]
        return pieces.enumerated().map { index, piece in
            let last = index == pieces.count - 1
            return parse == "cri"
                ? "\(time) stdout \(last ? "F" : "P") \(piece)\n"
                : #"{"log":"\#(piece)\#(last ? "\\n" : "")","stream":"stdout","time":"\#(time)"}"# + "\n"
        }.joined()
    }
}
