import Foundation
import StreamUpTestSupport
import Testing

/// `--to loki` into the Loki validator, which drops an entry whose stream, time and line equal
/// one it holds (as Loki does): a resent record carries the time it got when it entered the
/// buffer (the spool keeps it; without one, the state file keeps the times of what may have
/// been sent), so a resend after a lost answer or a `kill -9` is dropped. And `--to
/// elasticsearch`, whose validator answers 409 to a `create` of an `_id` it holds.
///
/// The Loki validator shards fast streams as Loki 3 does by default (`shard_streams`: a stream
/// whose rate and push pass the desired rate is dealt over `__stream_shard__` copies, so a
/// resend can land in another copy and be kept twice), with the desired rate scaled down to
/// this test's rate: the lines are written at ``linesPerSecond``, which Loki sees as roughly
/// 20–45 KB/s in one stream (its desired rate is passed and a resend may be stored twice) and
/// under 9 KB/s in each of the 8 streams streamup spreads its entries over (none is sharded).
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
        let sharding = kind == "loki" ? ["--desired-rate", "\(Self.desiredRate)"] : []
        try await ReceiverValidator.with(kind, ["--lose-answers", "3"] + sharding) { receiver in
            _ = FileManager.default.createFile(atPath: file, contents: nil)
            let spool = spooled ? ["--spool", scratch.file("spool")] : []
            let parsing = parse.map { ["--parse", $0] } ?? []
            let arguments =
                ["tail", "--from-start", "--state", scratch.file("state.json")] + spool + parsing + [
                    "--segment-bytes", "4k", "--segment-seconds", "50ms", file, "--to", kind, receiver.url.absoluteString,
                ]
            let written = Locked(0)
            let started = ContinuousClock.now
            // Appends the lines due by now at ``linesPerSecond`` (up to `total`).
            let grow: @Sendable () -> Void = {
                let elapsed = ContinuousClock.now - started
                let due = Int(Double(Self.linesPerSecond) * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
                written.withLock { written in
                    let next = min(total, due)
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
                        grow()
                        return (receiver.count()?.records ?? 0) >= target ? true : nil
                    }
                }
                #expect(reached == true, "round \(round): \(child.stderr.suffix(1_000))")
                child.signal(SIGKILL)
                _ = await child.waitForExit(timeout: 30)
                child = try StreamupProcess(arguments)
            }
            let all = await onOwnThread {
                poll(within: .seconds(90)) { () -> Bool? in
                    grow()
                    return (receiver.count()?.records ?? 0) >= total ? true : nil
                }
            }
            child.signal(SIGTERM)
            #expect(await child.waitForExit(timeout: 60) == 0, "stderr: \(child.stderr.suffix(2_000))")
            #expect(all == true)
            let snapshot = try await receiver.snapshot()
            #expect(snapshot.lines.count == total && Set(snapshot.text).count == total, "\(snapshot.lines.count) entries, \(Set(snapshot.text).count) distinct")
            #expect(snapshot.errors.isEmpty && snapshot.rejectedLines.isEmpty, "\(snapshot.errors.prefix(3))")
        }
    }

    /// How fast the file grows: 6,000 lines in 15 s, with the records' structured metadata
    /// (the path) about 75 bytes per entry as Loki counts them.
    private static let linesPerSecond = 400
    /// The Loki validator's desired rate (Loki: 1536 KB/s): what one stream of this test passes
    /// and an eighth of it does not (measured under load: one stream's average 23–44 KB/s with
    /// samples of 8–56 KB; each of 8 streams' 3.5–8.4 KB/s).
    private static let desiredRate = 12 * 1024

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
