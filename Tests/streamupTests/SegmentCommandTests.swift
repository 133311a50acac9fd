import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// Acknowledged segments as receivers that read whole requests need them: every request holds
/// whole lines, and together the requests are the input. The built binary against a sink that
/// keeps each request's body apart (no stream merging), and against a real ClickHouse.
@Suite(.timeLimit(.minutes(3))) struct SegmentCommandTests {
    /// 100,000 NDJSON lines of varying length with `--segment-bytes 100000`: every body ends
    /// with a newline, is at most 100,000 bytes, and the bodies in order are the input.
    @Test func everyRequestHoldsWholeLinesWithinTheSizeLimit() async throws {
        let input = ndjson(rows: 100_000)
        let bodies = try await bodiesReceived(["--segment-bytes", "100000"]) { child in
            child.write(input)
            child.closeStdin()
        }
        #expect(bodies.count >= 20, "\(bodies.count) requests")
        #expect(bodies.allSatisfy { $0.last == UInt8(ascii: "\n") && $0.count <= 100_000 }, "\(bodies.map(\.count))")
        #expect(bodies.joined().elementsEqual(input.utf8))
    }

    /// The time limit ends a request only at a line boundary: a line written in two halves with
    /// the deadline passing in between stays whole, in the next request.
    @Test func theTimeLimitEndsRequestsOnlyAfterWholeLines() async throws {
        var expected = ""
        let bodies = try await bodiesReceived(["--segment-seconds", "200ms"]) { child in
            for index in 0..<4 {
                child.write("line \(index) first half ")
                try await Task.sleep(for: .milliseconds(350))  // the scenario: the deadline passes mid-line
                child.write("second half\n")
                expected += "line \(index) first half second half\n"
            }
            child.closeStdin()
        }
        #expect(bodies.count >= 2, "the time limit never ended a request")
        #expect(bodies.allSatisfy { $0.last == UInt8(ascii: "\n") }, "\(bodies.map { String(decoding: $0, as: UTF8.self) })")
        #expect(String(decoding: bodies.joined(), as: UTF8.self) == expected)
    }

    /// A 3 MiB line with 1 MiB segments (and `--max-record 4MiB`) arrives whole, in a request of
    /// its own; the lines around it arrive too.
    @Test func aLineLongerThanTheSegmentGoesWholeInARequestOfItsOwn() async throws {
        let long = String(repeating: "x", count: 3 << 20) + "\n"
        let input = "before\n" + long + "after\n"
        let bodies = try await bodiesReceived(["--segment-bytes", "1MiB", "--max-record", "4MiB"]) { child in
            child.write(input)
            child.closeStdin()
        }
        #expect(bodies.contains { $0.elementsEqual(long.utf8) }, "\(bodies.map(\.count))")
        #expect(String(decoding: bodies.joined(), as: UTF8.self) == input)
    }

    /// A line longer than `--max-record` is split into pieces of that size, with one warning.
    @Test func aLineLongerThanMaxRecordIsSplitWithOneWarning() async throws {
        let input = String(repeating: "y", count: 300_000) + "\n" + String(repeating: "z", count: 300_000) + "\n"
        var stderr = ""
        let bodies = try await bodiesReceived(["--segment-bytes", "64k", "--max-record", "100k"]) { child in
            child.write(input)
            child.closeStdin()
        } stderr: {
            stderr = $0
        }
        #expect(bodies.allSatisfy { $0.count <= 100 << 10 }, "\(bodies.map(\.count))")
        #expect(String(decoding: bodies.joined(), as: UTF8.self) == input)
        #expect(stderr.components(separatedBy: "was split").count == 2, "stderr: \(stderr)")
    }

    /// A 400 for one segment with `--dead-letter`: that segment is kept in DIR (its body and a
    /// record of the answer), the rest arrives, and the exit status says something was refused.
    @Test func aRefusedSegmentIsKeptAsADeadLetterAndTheRestArrives() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let dead = work.appendingPathComponent("dead").path
        let input = ndjson(rows: 20_000)
        try await withSink(configure: { $0.faults = SinkFaults(failNextRequests: 1, failStatus: 400) }) { sink, directory in
            let child = try StreamupProcess(["--segment-bytes", "50000", "--dead-letter", dead, sink.url.absoluteString])
            child.write(input)
            child.closeStdin()
            #expect(await child.waitForExit() == 1, "stderr: \(child.stderr)")
            let names = try FileManager.default.contentsOfDirectory(atPath: dead).sorted()
            #expect(names.count == 2 && names[0].hasSuffix(".body") && names[1].hasSuffix(".json"), "\(names)")
            let refused = try String(contentsOfFile: dead + "/" + names[0], encoding: .utf8)
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dead + "/" + names[1]))) as? [String: String]
            #expect(record?["status"] == "400" && record?["offset"] == "0")
            #expect(refused.hasSuffix("\n") && refused.utf8.count <= 50_000)
            #expect(refused + (streamText(in: directory) ?? "") == input)
            #expect(child.stderr.contains("1 segment was not delivered"), "stderr: \(child.stderr)")
        }
    }

    /// A sink that resets the connection every 1 MB, with the default segment size (8 MiB)
    /// and `--retries forever`: segments shrink until they get through, and the stream arrives
    /// byte for byte. Long set: `DeliveryMachineTests.aSegmentBrokenThreeTimesInARowGoesSmallerForGood`
    /// shows the shrinking on the manual clock.
    @Test(.long) func aLinkThatBreaksEveryMegabyteStillDelivers() async throws {
        let input = ndjson(rows: 400_000)  // about 10 MB
        try await withSink(configure: { configuration in
            configuration.faults = SinkFaults(dropAfterBytes: 1_000_000, dropRepeatedly: true)
            configuration.recentEventLimit = 10_000
        }) { sink, directory in
            let child = try StreamupProcess(["--retries", "forever", sink.url.absoluteString])
            child.write(input)
            child.closeStdin()
            #expect(await child.waitForExit(timeout: 150) == 0, "stderr: \(child.stderr)")
            #expect(streamText(in: directory) == input)
            #expect(sink.requests.filter { !$0.isComplete }.count >= 5, "the link was not cut")
            #expect(child.stderr.contains("delivery is failing") && child.stderr.contains("delivery recovered"))
        }
    }

    /// ClickHouse (the real server): 100,000 NDJSON rows through the default delivery and with
    /// 100,000-byte segments land as exactly 100,000 rows each time.
    @Test(.enabled(if: ClickHouse.isAvailable), .serialized, arguments: [[], ["--segment-bytes", "100000"]])
    func clickHouseStoresEveryRow(options: [String]) async throws {
        try await ClickHouse.with { clickhouse in
            let input = (1...100_000).map { #"{"n":\#($0)}"# + "\n" }.joined()
            let child = try StreamupProcess(options + [clickhouse.insertURL(into: "t")])
            child.write(input)
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try await clickhouse.query("SELECT count(), uniqExact(n), min(n), max(n) FROM t") == "100000\t100000\t1\t100000")
        }
    }
}

/// `rows` NDJSON lines of varying length.
private func ndjson(rows: Int) -> String {
    (1...rows).map { #"{"n":\#($0),"pad":"\#(String(repeating: "p", count: $0 % 37))"}"# + "\n" }.joined()
}

/// Runs `streamup OPTIONS URL` against a sink that keeps every request's body apart (in memory,
/// no stream merging), lets `feed` write its stdin, and returns the bodies in arrival order
/// once it exited 0.
private func bodiesReceived(
    _ options: [String], feed: (StreamupProcess) async throws -> Void, stderr: (String) -> Void = { _ in }
) async throws -> [[UInt8]] {
    var configuration = SinkConfiguration()
    configuration.keepBodiesInMemory = true
    configuration.maxBodyBytesInMemory = 64 << 20
    configuration.recentEventLimit = 10_000
    let sink = try SinkServer(configuration: configuration)
    sink.start()
    defer { sink.stop() }
    let child = try StreamupProcess(options + [sink.url.absoluteString])
    try await feed(child)
    #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
    stderr(child.stderr)
    let requests = sink.requests
    #expect(requests.allSatisfy { $0.isComplete && $0.status == 200 })
    return requests.compactMap(\.body).map { [UInt8]($0) }
}
