import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// A spool across crashes: the built binary, fed stdin in writes of random sizes, killed with
/// SIGKILL at random points while the server is down and again while it delivers, restarted
/// each time with the same `--spool`: the receiver ends up with the input byte for byte.
@Suite(.timeLimit(.minutes(3))) struct SpoolCrashTests {
    /// Four runs take random amounts of stdin (writes of 1 B to 4 MiB, lines of varying length)
    /// into the spool while the server is down, each killed once the spool holds what it was
    /// given (stdin that was read but not yet spooled cannot be read again, README says); then
    /// runs with the server up are killed at random points of the delivery, and a last one
    /// delivers the rest. The stored stream is the input: SHA-256 equal, nothing missing,
    /// nothing twice. Each restart opens a spool of 256 KiB index entries (stdin's reads),
    /// which crashed streamup (heap overflow, exit 134).
    @Test func killedAtRandomPointsTheSpoolDeliversEveryByteOnce() async throws {
        var random = SeededRandom()
        let scratch = try TemporaryDirectory()
        let spool = scratch.file("spool")
        let stored = scratch.url.appendingPathComponent("sink")
        try FileManager.default.createDirectory(at: stored, withIntermediateDirectories: true)
        var lines = LineSource()
        var input = Data()

        // A port nobody listens on: the server is down while stdin is spooled.
        let probe = try startedSink(port: 0, storingIn: stored)
        let down = probe.url.absoluteString
        probe.stop()
        for run in 0..<4 {
            let child = try StreamupProcess(["--spool", spool, "--retries", "forever", down])
            let amount = Int.random(in: (1 << 20)...(6 << 20), using: &random)
            let start = input.count
            while input.count - start < amount {
                // Sizes spread evenly over their order of magnitude: as many tiny writes as huge ones.
                let size = min(4 << 20, Int(pow(2, Double.random(in: 0...22, using: &random))))
                let chunk = lines.next(size, using: &random)
                await write(chunk, to: child)
                input.append(chunk)
            }
            // Each run's input ends with a whole line: a restart drops a line a run was killed
            // in the middle of (its rest would be another run's input, glued onto it).
            let rest = lines.restOfLine()
            if !rest.isEmpty { await write(rest, to: child) }
            input.append(rest)
            let taken = await eventually { spoolEnd(spool) == input.count }
            #expect(taken, "run \(run): the spool holds \(spoolEnd(spool)) of \(input.count) bytes; \(random); stderr: \(child.stderr)")
            #expect(child.process.isRunning, "run \(run) ended before it was killed; \(random); stderr: \(child.stderr)")
            guard taken else {
                child.signal(SIGKILL)
                _ = await child.waitForExit()
                return
            }
            child.signal(SIGKILL)
            _ = await child.waitForExit()
        }

        let sink = try startedSink(port: 0, storingIn: stored)
        defer { sink.stop() }
        for run in 0..<3 {
            let child = try StreamupProcess(["--spool", spool, "--segment-bytes", "512KiB", sink.url.absoluteString], stdinFile: "/dev/null")
            let point = Int.random(in: 0..<(input.count / 2), using: &random)
            let reached = await eventually { storedSize(stored) >= point || !child.process.isRunning }
            #expect(reached && child.process.isRunning, "delivery run \(run) ended before its kill point \(point); \(random); stderr: \(child.stderr)")
            child.signal(SIGKILL)
            _ = await child.waitForExit()
        }
        let last = try StreamupProcess(["--spool", spool, sink.url.absoluteString], stdinFile: "/dev/null")
        #expect(await last.waitForExit() == 0, "\(random); stderr: \(last.stderr)")

        let streams = nonEmptyStreams(in: stored)
        #expect(streams.count == 1, "streams stored: \(streams); \(random)")
        let expected = scratch.file("input")
        try input.write(to: URL(fileURLWithPath: expected))
        let path = try #require(streams.first)
        #expect(storedSize(stored) == input.count, "stored \(storedSize(stored)) of \(input.count) bytes; \(random)")
        #expect(try await sha256sum(path) == sha256sum(expected), "\(random)")
    }
}

/// Writes `data` to the child's stdin from a thread of its own (a pipe write blocks until the
/// child has read it, which no cooperative thread should wait for).
private func write(_ data: Data, to child: StreamupProcess) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            child.write(data)
            continuation.resume()
        }
    }
}

/// Log-like lines (`S seq=00000042 ` and 0 to 300 letters), handed out in pieces of any size.
///
/// Thread safety: a value type, used by one test.
private struct LineSource {
    private var sequence = 0
    private var pending: [UInt8] = []

    mutating func next(_ count: Int, using random: inout SeededRandom) -> Data {
        while pending.count < count {
            let letters = Int.random(in: 0...300, using: &random)
            let line = "S seq=\(String(format: "%08d", sequence)) " + String(repeating: "y", count: letters) + "\n"
            pending += Array(line.utf8)
            sequence += 1
        }
        defer { pending.removeFirst(count) }
        return Data(pending[..<count])
    }

    /// What is left of the line the last piece ended in (nothing when it ended a line).
    mutating func restOfLine() -> Data {
        guard let newline = pending.firstIndex(of: 0x0A) else { return Data() }
        defer { pending.removeFirst(newline + 1) }
        return Data(pending[...newline])
    }
}

/// The stream offset just past the spool's newest byte: its files are named by the offset of
/// their first byte.
private func spoolEnd(_ spool: String) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []
    return names.filter { $0.hasSuffix(".spool") }.compactMap { name -> Int? in
        guard let start = Int(name.dropLast(".spool".count)) else { return nil }
        return start + fileSize("\(spool)/\(name)")
    }.max() ?? 0
}

/// The sink's stream files in `directory` that hold bytes.
private func nonEmptyStreams(in directory: URL) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.filter { $0.hasPrefix("stream-") && $0.hasSuffix(".body") }
        .map { directory.appendingPathComponent($0).path }
        .filter { fileSize($0) > 0 }
}

/// Bytes the sink stored in its stream files.
private func storedSize(_ directory: URL) -> Int {
    nonEmptyStreams(in: directory).reduce(0) { $0 + fileSize($1) }
}

private func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}
