import Foundation
import StreamUpSink

/// The sink `streamup` streams to when no URL is given (a dry run): on 127.0.0.1, storing what
/// arrives in a temporary directory, and at the end printing what it holds on stdout as one
/// JSON line, `{"bytes":N,"sha256":"…"}`, whatever the delivery mode: for segmented or
/// resumable delivery that is the merged stream, not the last request.
///
/// Thread safety: used from the main task; the sink runs on threads of its own.
enum LocalSink {
    /// Runs `body` against a local sink; prints its summary (on stdout, or into `output`) when
    /// `body` returned 0.
    static func run(output: String? = nil, _ body: (_ url: String) async -> Int32) async -> Int32 {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("streamup-dry-run-\(UUID().uuidString)")
        let sink: SinkServer
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            sink = try SinkServer(configuration: SinkConfiguration(outputDirectory: directory.path))
            sink.start()
        } catch {
            Terminal.error("cannot start the local sink: \(error)")
            return ExitStatus.ioFailure
        }
        defer {
            sink.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        Terminal.info("no URL given: streaming to a local sink at \(sink.url) (end of input ends the body)")
        let status = await body(sink.url.absoluteString)
        guard status == ExitStatus.success else { return status }
        guard let summary = summary(of: directory, requests: sink.requests) else {
            Terminal.error("the local sink holds nothing to report")
            return ExitStatus.noAnswer
        }
        return ResultOutput.writeLine(#"{"bytes":\#(summary.bytes),"sha256":"\#(summary.sha256)"}"#, what: "the dry run's summary", to: output)
    }

    /// The merged stream if there is one, else the last request the sink stored whole.
    private static func summary(of directory: URL, requests: [SinkRequestEvent]) -> (bytes: Int, sha256: String)? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        if let stream = names.first(where: { $0.hasPrefix("stream-") && $0.hasSuffix(".body") }),
            let handle = FileHandle(forReadingAtPath: directory.appendingPathComponent(stream).path)
        {
            defer { try? handle.close() }
            var hasher = SHA256()
            var bytes = 0
            while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update([UInt8](chunk))
                bytes += chunk.count
            }
            return (bytes, SHA256.hex(hasher.finalize()))
        }
        guard let last = requests.last(where: { $0.isComplete && (200..<300).contains($0.status) }), let sha256 = last.sha256 else {
            return nil
        }
        return (last.bodyByteCount, sha256)
    }
}
