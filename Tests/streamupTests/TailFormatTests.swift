import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

/// `tail --format ndjson` over several files: every record names the file its line came from.
@Suite(.timeLimit(.minutes(2))) struct TailFormatTests {
    @Test func recordsNameTheFileOfTheirLine() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let a = work.appendingPathComponent("a.log").path
        let b = work.appendingPathComponent("b.log").path
        try "a1\na2\n".write(toFile: a, atomically: false, encoding: .utf8)
        try "b1\n".write(toFile: b, atomically: false, encoding: .utf8)
        try await withSink { sink, directory in
            let child = try StreamupProcess([
                "tail", "--from-start", "--format", "ndjson", "--time-key", "none", work.path + "/*.log", sink.url.absoluteString,
            ])
            func records() -> [[String: String]] {
                (streamText(in: directory) ?? "").split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
                }
            }
            #expect(await eventually { records().count == 3 })
            try append("b2\n", to: b)
            #expect(await eventually { records().count == 4 })
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let byFile = Dictionary(grouping: records(), by: { $0["path"] ?? "" }).mapValues { $0.compactMap { $0["message"] } }
            #expect(byFile == [a: ["a1", "a2"], b: ["b1", "b2"]], "\(records())")
        }
    }
}
