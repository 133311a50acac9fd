import Foundation
import StreamUpTestSupport
import Testing

/// `--to loki` into the Loki validator, which drops an entry whose stream, time and line equal
/// one it holds (as Loki does): a resent record carries the time it got when it entered the
/// buffer (the spool keeps it; without one, the state file keeps the times of what may have
/// been sent), so a resend after a lost answer or a `kill -9` is dropped. And `--to
/// elasticsearch`, whose validator answers 409 to a `create` of an `_id` it holds.
@Suite(.timeLimit(.minutes(5))) struct LokiExactlyOnceTests {
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

    /// Runs `tail --state FILE` (and `--spool` when `spooled`) into the validator of `kind`,
    /// which loses every third answer; kills it three times while the file grows; then expects
    /// every line stored exactly once.
    private func killThreeTimes(spooled: Bool, into kind: String) async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.file("app.log")
        let total = 6_000
        try await ReceiverValidator.with(kind, ["--lose-answers", "3"]) { receiver in
            _ = FileManager.default.createFile(atPath: file, contents: nil)
            let spool = spooled ? ["--spool", scratch.file("spool")] : []
            let arguments =
                ["tail", "--from-start", "--state", scratch.file("state.json")] + spool + [
                    "--segment-bytes", "4k", "--segment-seconds", "50ms", file, "--to", kind, receiver.url.absoluteString,
                ]
            let written = Locked(0)
            // Appends the next `lines` lines (up to `total`).
            let grow: @Sendable (Int) -> Void = { lines in
                written.withLock { written in
                    let next = min(total, written + lines)
                    guard next > written, let writer = FileHandle(forWritingAtPath: file) else { return }
                    writer.seekToEndOfFile()
                    writer.write(Data(((written + 1)...next).map { String(format: "grow-%06d\n", $0) }.joined().utf8))
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
}
