import Foundation
import StreamUpTestSupport
import Testing

/// What a preset makes of lines, end to end with the built binary into the receiver validators
/// (`Tests/Receivers/receiver.py`): `tail` sends the receiver's records as stdin does, no
/// record is longer than the preset's documented limit (escapes included) however the bytes
/// arrive, and bytes that are not UTF-8 arrive as U+FFFD.
@Suite(.timeLimit(.minutes(5))) struct PresetRecordTests {
    /// The presets with a record limit, as README's Receivers table states it (bytes of one
    /// record's JSON, escapes included), and what each validator needs.
    static let limited: [(kind: String, limit: Int)] = [
        ("victorialogs", 256 << 10), ("loki", 256 << 10), ("splunk-hec", 128 << 10), ("datadog", 128 << 10), ("fluent-bit", 256 << 10),
        ("elasticsearch", 1 << 20), ("otlp", 1 << 20),
    ]

    /// The streamup options, validator options and URL path a kind needs.
    static func setting(_ kind: String) -> (options: [String], validator: [String], path: String) {
        switch kind {
        case "splunk-hec": (["-H", "Authorization: Splunk t"], ["--token", "t"], "")
        case "datadog": (["-H", "DD-API-KEY: k"], ["--api-key", "k"], "")
        case "fluent-bit": ([], [], "/app.logs")
        default: ([], [], "")
        }
    }

    /// The bytes of `line` (ASCII) inside a JSON string: control characters take six (`\u0001`)
    /// or two (`\t`), quotes and backslashes two.
    static func escapedCount(_ line: [UInt8]) -> Int {
        line.reduce(0) { count, byte in
            switch byte {
            case 0x22, 0x5C, 0x08, 0x09, 0x0A, 0x0C, 0x0D: count + 2
            case 0x00..<0x20: count + 6
            default: count + 1
            }
        }
    }

    /// A 300 KiB line of text with quotes in it, and a 60,000-byte line of control characters
    /// (each six bytes escaped: 360,000).
    static let longLines: [[UInt8]] = [
        Array(String(repeating: #"a "quoted" word and more text; "#, count: 300 * 1024 / 32).utf8),
        (0..<60_000).map { UInt8(1 + $0 % 8) },
    ]

    /// Runs `streamup --to KIND URL` with `input` on stdin, written in pieces of `pieces` bytes
    /// (nil: one write), against a fresh validator.
    static func ship(_ kind: String, _ input: [UInt8], pieces: Int?) async throws -> (status: Int32?, stderr: String, snapshot: ReceiverValidator.Snapshot) {
        let setting = setting(kind)
        return try await ReceiverValidator.with(kind, setting.validator) { validator in
            let child = try StreamupProcess(["--to", kind] + setting.options + [validator.url.absoluteString + setting.path])
            Thread.detachNewThread {
                if let pieces {
                    for start in stride(from: 0, to: input.count, by: pieces) {
                        child.write(Data(input[start..<min(start + pieces, input.count)]))
                    }
                } else {
                    child.write(Data(input))
                }
                child.closeStdin()
            }
            let status = await child.waitForExit(timeout: 120)
            return (status, child.stderr, try await validator.snapshot())
        }
    }

    /// Checks that `stored` holds `lines` in order, each whole or cut into pieces of at most
    /// `limit` escaped bytes (the record's time, host and keys take the rest), each piece but
    /// the last longer than `limit` less 1 KiB: cut at the limit, not before. A line that fits
    /// is one record.
    static func expectCut(_ stored: [[UInt8]], _ lines: [[UInt8]], limit: Int, _ context: String) {
        var index = 0
        for line in lines {
            var joined: [UInt8] = []
            var pieces: [[UInt8]] = []
            while joined.count < line.count, index < stored.count {
                pieces.append(stored[index])
                joined += stored[index]
                index += 1
            }
            #expect(joined == line, "\(context): a line of \(line.count) bytes came back as pieces of \(pieces.map(\.count))")
            let sizes = pieces.map(escapedCount)
            #expect(sizes.allSatisfy { $0 <= limit - 16 }, "\(context): pieces of \(sizes) escaped bytes, over the \(limit)-byte record limit")
            #expect(sizes.dropLast().allSatisfy { $0 > limit - 1024 }, "\(context): cut short of the limit: \(sizes)")
            if escapedCount(line) <= limit - 1024 { #expect(pieces.count == 1, "\(context): a line that fits was cut: \(sizes)") }
        }
        #expect(index == stored.count, "\(context): \(stored.count - index) records more than the lines")
    }

    /// A 300 KiB line and a 60,000-byte line of control characters, between short lines, from
    /// stdin: cut at the preset's documented record size (or whole where they fit), the same
    /// pieces whether they come in 1,000-byte writes or one write, and nothing the receiver
    /// skips or refuses (VictoriaLogs skips a JSON line over 256 KiB answering 200; Loki refuses
    /// a line over 256 KiB).
    @Test(arguments: limited, [1000, nil])
    func longLinesAreCutAtTheEncodedLimit(preset: (kind: String, limit: Int), pieces: Int?) async throws {
        let lines = [Array("before".utf8)] + Self.longLines + [Array("after".utf8)]
        let input: [UInt8] = lines.flatMap { $0 + [0x0A] }
        let (status, stderr, snapshot) = try await Self.ship(preset.kind, input, pieces: pieces)
        let context = "\(preset.kind), writes of \(pieces.map(String.init) ?? "all")"
        #expect(status == 0, "\(context): stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(context): \(snapshot.errors.prefix(3))")
        Self.expectCut(snapshot.lines, lines, limit: preset.limit, context)
    }

    /// Bytes that are not UTF-8 arrive as U+FFFD, one per maximal subpart: Loki refuses a
    /// whole request holding a lone surrogate (`\udcXX`), VictoriaLogs stores one as its text.
    /// `--format ndjson,surrogateescape` still writes the lossless escape (VictoriaLogs: text).
    @Test(arguments: ["loki", "victorialogs"])
    func invalidUTF8ArrivesAsReplacementCharacters(kind: String) async throws {
        let lines: [[UInt8]] = [
            Array("latin-1 caf".utf8) + [0xE9], [0xFF, 0xFE, 0x20, 0xC3] + Array(" two".utf8), [0xE2, 0x82, 0x41], [0xED, 0xA0, 0x80, 0x41],
            Array("valid é 日本 😀".utf8),
        ]
        let (status, stderr, snapshot) = try await Self.ship(kind, lines.flatMap { $0 + [0x0A] }, pieces: nil)
        #expect(status == 0, "stderr: \(stderr)")
        #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
        let expected: [[UInt8]] = [
            Array("latin-1 caf\u{FFFD}".utf8), Array("\u{FFFD}\u{FFFD} \u{FFFD} two".utf8), Array("\u{FFFD}A".utf8),
            Array("\u{FFFD}\u{FFFD}\u{FFFD}A".utf8), Array("valid é 日本 😀".utf8),
        ]
        #expect(snapshot.holds(expected), "\(snapshot.text)")
    }

    /// With `,surrogateescape` the escape goes as it is: VictoriaLogs stores its text.
    @Test func surrogateEscapeIsAChoice() async throws {
        try await ReceiverValidator.with("victorialogs") { validator in
            let child = try StreamupProcess(["--to", "victorialogs", "--format", "ndjson,surrogateescape", validator.url.absoluteString])
            child.write(Data([0x61, 0xFF, 0x0A]))
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try await validator.snapshot().text == [#"a\udcff"#])
        }
    }

    /// `streamup tail FILE --to KIND URL`: every line of the file once, whole, in the
    /// receiver's own format (the validator finds no error); a 300 KiB line is cut at the
    /// preset's record size as from stdin.
    @Test(arguments: [("loki", 256 << 10), ("elasticsearch", 1 << 20), ("victorialogs", 256 << 10)])
    func tailSendsTheReceiversRecords(kind: String, limit: Int) async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appendingPathComponent("app.log").path
        let short = ReceiverPresetTests.lines(400).filter { !$0.isEmpty }
        let lines = short + [Self.longLines[0]]
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: file))
        let expected = short.map(ReceiverPresetTests.stored) + [Self.longLines[0]]
        try await ReceiverValidator.with(kind) { validator in
            let child = try StreamupProcess(["tail", "--from-start", file, "--to", kind, validator.url.absoluteString])
            var snapshot = try await validator.snapshot()
            let deadline = ContinuousClock.now + TestTime.scaled(.seconds(60))
            // Each look asks the validator (a Python run): no pause is needed between them.
            func arrived(_ snapshot: ReceiverValidator.Snapshot) -> Bool {
                snapshot.lines.dropFirst(short.count).reduce(0) { $0 + $1.count } >= Self.longLines[0].count
            }
            while !arrived(snapshot), snapshot.errors.isEmpty, ContinuousClock.now < deadline {
                snapshot = try await validator.snapshot()
            }
            child.signal(SIGTERM)
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            snapshot = try await validator.snapshot()
            #expect(snapshot.errors.isEmpty, "\(snapshot.errors.prefix(3))")
            #expect(Array(snapshot.lines.prefix(short.count)) == Array(expected.prefix(short.count)), "\(snapshot.text.prefix(5))")
            Self.expectCut(Array(snapshot.lines.dropFirst(short.count)), [Self.longLines[0]], limit: limit, "tail --to \(kind)")
        }
    }
}
