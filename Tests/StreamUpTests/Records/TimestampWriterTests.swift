import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct TimestampWriterTests {
    /// Timestamps match Python's datetime for random instants from 1900 to 2200 (before 1970
    /// included), written in a shuffled order so the per-second cache is both hit and missed.
    @Test func timestampsMatchPythonDatetime() throws {
        var random = SeededRandom(seed: 9)
        var instants: [Int64] = [0, -1, 999, 1000, -1000, -1001, 951_782_400_000, 4_107_542_399_999]  // leap day 2000, end of 2099
        for _ in 0..<3000 {
            let instant = Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &random)
            instants += [instant, instant + 1, instant]
        }
        var writer = TimestampWriter()
        var text: [UInt8] = []
        for instant in instants {
            writer.append(milliseconds: instant, to: &text)
            text.append(0x0A)
        }
        let program = """
            import sys, datetime
            epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
            for word in sys.stdin.read().split():
                t = epoch + datetime.timedelta(milliseconds=int(word))
                print(t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000))
            """
        let python = try ExternalTool.python(program, input: Array(instants.map(String.init).joined(separator: " ").utf8))
        #expect(python.status == 0, "python3 failed: \(python.errorText)")
        let ours = text.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
        let theirs = python.output.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
        try #require(ours.count == theirs.count)
        let differing = zip(instants, zip(ours, theirs)).filter { $1.0 != $1.1 }
        #expect(differing.isEmpty, "first differences: \(differing.prefix(3))")
    }
}
