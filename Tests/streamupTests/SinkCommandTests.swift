import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import streamup

/// `streamup sink` as a user meets it: its options, its help, and what it says when it cannot
/// start, run as the built binary where only the whole program shows it.
@Suite(.timeLimit(.minutes(2))) struct SinkCommandTests {
    /// `sink --port 0` tells the port it got only on stdout: with stdout closed or its reader
    /// gone, nobody could reach it, so it ends at once (74) with one line saying why.
    @Test(arguments: [StreamupProcess.Attachment.closed, .readerGone])
    func pickedPortThatCannotBeToldEnds(stdout: StreamupProcess.Attachment) async throws {
        let child = try StreamupProcess(["sink", "--port", "0"], stdout: stdout)
        #expect(await child.waitForExit(timeout: 20) == 74, "stderr: \(child.stderr)")
        let why = stdout == .closed ? "stdout is closed" : "the reader of stdout has gone (broken pipe)"
        #expect(child.stderr == "streamup: sink: nobody can learn the port picked: \(why); give --port PORT to choose one\n")
    }

    private func sink(_ arguments: [String]) throws -> SinkOptions {
        guard case .sink(let options) = try CommandLineParser.parse(["sink"] + arguments) else {
            Issue.record("not a sink command")
            return SinkOptions()
        }
        return options
    }

    /// The options against hostile clients fill in the sink's limits; bad values are usage errors.
    @Test func hardeningOptionsAreParsed() throws {
        let options = try sink([
            "--max-body", "1MiB", "--head-timeout", "2s", "--min-body-rate", "2000", "--body-rate-window", "3s",
            "--max-uploads", "5", "--upload-expiry", "10m",
        ])
        #expect(options.maxBodyBytes == 1 << 20)
        #expect(options.headTimeout == .seconds(2))
        #expect(options.minimumBodyBytesPerSecond == 2_000)
        #expect(options.bodyRateWindow == .seconds(3))
        #expect(options.maxUploads == 5)
        #expect(options.uploadExpiry == .seconds(600))

        let defaults = try sink([])
        #expect(defaults.maxBodyBytes == nil && defaults.headTimeout == .seconds(10))
        #expect(defaults.minimumBodyBytesPerSecond == 500 && defaults.maxUploads == 1_000)
        #expect(try sink(["--min-body-rate", "off"]).minimumBodyBytesPerSecond == nil)
        #expect(try sink(["--min-body-rate", "0"]).minimumBodyBytesPerSecond == nil)
        for bad in [["--max-body", "lots"], ["--head-timeout", "0s"], ["--min-body-rate", "-1"], ["--max-uploads", "0"]] {
            #expect(throws: UsageError.self, "\(bad)") { try CommandLineParser.parse(["sink"] + bad) }
        }
    }

    /// An `--output` that names a file is one line saying what happened and what to do, exit 74
    /// (it was a multi-line NSCocoaErrorDomain dump).
    @Test func anOutputThatIsAFileIsOneActionableLine() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.file("not-a-directory")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: file))
        let child = try StreamupProcess(["sink", "--port", "0", "--output", file])
        child.closeStdin()
        #expect(await child.waitForExit() == 74)
        let lines = child.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(child.stderr)")
        #expect(child.stderr.hasPrefix("streamup: sink: cannot create the output directory \(file): "))
        #expect(child.stderr.contains("choose another directory"))
        #expect(!child.stderr.contains("Domain"))
    }

    /// A port in use is one line naming the address, the reason and the remedy, exit 74.
    @Test func aPortInUseIsOneActionableLine() async throws {
        let taken = try SinkServer()
        defer { taken.stop() }
        let child = try StreamupProcess(["sink", "--port", String(taken.port)])
        child.closeStdin()
        #expect(await child.waitForExit() == 74)
        #expect(child.stderr.split(separator: "\n").count == 1, "\(child.stderr)")
        #expect(child.stderr.contains("cannot listen on 127.0.0.1:\(taken.port): bind: Address already in use"))
        #expect(child.stderr.contains("pick another port"))
    }

    /// The help names the stored files as they are (8 digits), gives the exit statuses, and
    /// every sink option is documented in README.md's section on the sink too.
    @Test func helpAndReadmeDescribeWhatTheSinkDoes() throws {
        let help = SinkOptions.help
        #expect(help.contains("DIR/NNNNNNNN-METHOD.body"))
        #expect(!help.contains("/NNNNNN-"))
        #expect(help.contains("Exit status: 0 when stopped by SIGINT or SIGTERM"))

        let readme = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let start = try #require(text.range(of: "### The sink"))
        let section = text[start.upperBound...]
        let sinkSection = section[..<(section.range(of: "\n## ")?.lowerBound ?? section.endIndex)]
        for spec in SinkOptions.table {
            let name = spec.names.last ?? ""
            guard name != "--help", name != "--version" else { continue }
            #expect(sinkSection.contains(name), "README's sink section does not mention \(name)")
        }
    }

    /// `--max-body` reaches the running sink: an upload over it is refused with 413, and the
    /// uploading streamup exits 1 naming the status.
    @Test func maxBodyIsEnforcedByTheRunningSink() async throws {
        let sink = try StreamupProcess(["sink", "--port", "0", "--max-body", "10"])
        defer { sink.signal(SIGTERM) }
        #expect(await eventually { sink.stdout.hasPrefix("listening on http://") && sink.stdout.contains("\n") })
        let url = try #require(sink.stdout.split(separator: "\n").first?.dropFirst("listening on ".count))
        let upload = try StreamupProcess([String(url) + "/"])
        upload.write("eleven bytes and more\n")
        upload.closeStdin()
        #expect(await upload.waitForExit() == 1)
        #expect(upload.stderr.contains("413"), "\(upload.stderr)")
        sink.signal(SIGTERM)
        #expect(await sink.waitForExit() == 0)
    }
}
