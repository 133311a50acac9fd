import Foundation
import StreamUpSink

/// `streamup sink [options]`: run the local HTTP sink until SIGINT/SIGTERM.
///
/// Thread safety: a value type.
struct SinkOptions: Sendable, Equatable {
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    var outputDirectory: String?
    var maxConnections = 1024
    var idleTimeout: Duration = .seconds(60)
    var hashBodies = true
    /// Send `104 Upload Resumption Supported` on resumable-upload creations (`--no-104` turns it off).
    var sendsUploadResumptionSupported = true
    /// Faults to inject on purpose (`--drop-after`, `--fail-next`, `--read-rate`, `--stall-after`,
    /// `--forget-uploads-after`).
    var faults = SinkFaults.none

    static let table: [OptionSpec<SinkOptions>] = [
        .value("--host", valueName: "HOST", help: "address to listen on (default 127.0.0.1)") { options, value in
            options.host = value
        },
        .value("-p", "--port", valueName: "PORT", help: "port to listen on (default 8080; 0 picks a free one)") { options, value throws(UsageError) in
            guard let port = UInt16(value) else { throw UsageError("--port: '\(value)' is not a port number (0-65535)") }
            options.port = port
        },
        .value("-o", "--output", valueName: "DIR", help: "store each request body in its own file in DIR (created if missing)") { options, value in
            options.outputDirectory = value
        },
        .value("--max-connections", valueName: "N", help: "most connections served at once (default 1024)") { options, value throws(UsageError) in
            guard let count = Int(value), count > 0 else { throw UsageError("--max-connections: '\(value)' is not a positive number") }
            options.maxConnections = count
        },
        .value("--idle-timeout", valueName: "DURATION", help: "close a connection silent this long (default 60s)") { options, value throws(UsageError) in
            options.idleTimeout = try parseDuration(value, option: "--idle-timeout")
        },
        .flag("--no-hash", help: "do not compute SHA-256 of bodies (for measuring raw receive speed)") { $0.hashBodies = false },
        .flag("--no-104", help: "resumable uploads: no 104 Upload Resumption Supported on creation") {
            $0.sendsUploadResumptionSupported = false
        },
        .value("--drop-after", valueName: "BYTES", help: "fault: reset the first request reaching BYTES body bytes") { options, value throws(UsageError) in
            options.faults.dropAfterBytes = try count(value, option: "--drop-after", minimum: 0)
        },
        .flag("--drop-every", help: "fault: with --drop-after, reset a connection every BYTES body bytes (counted across requests)") { $0.faults.dropRepeatedly = true },
        .value("--fail-next", valueName: "K", help: "fault: answer the next K requests --fail-status") { options, value throws(UsageError) in
            options.faults.failNextRequests = try count(value, option: "--fail-next", minimum: 0)
        },
        .value("--lose-answers", valueName: "K", help: "fault: store the next K requests answered 200, then reset the connection instead of answering") { options, value throws(UsageError) in
            options.faults.loseAnswers = try count(value, option: "--lose-answers", minimum: 0)
        },
        .flag("--conflict-forgets", help: "fault: a 409 to a resumable PATCH also forgets the upload, as NIOResumableUpload does") { $0.faults.conflictForgetsUpload = true },
        .value("--fail-status", valueName: "S", help: "fault: the status for --fail-next, 400-599 (default 503)") { options, value throws(UsageError) in
            let status = try count(value, option: "--fail-status", minimum: 400)
            guard status <= 599 else { throw UsageError("--fail-status: '\(value)' is not a status in 400-599") }
            options.faults.failStatus = status
        },
        .value("--retry-after", valueName: "N", help: "fault: Retry-After on failures (default 1 for 503/429)") { options, value throws(UsageError) in
            options.faults.retryAfterSeconds = try count(value, option: "--retry-after", minimum: 0)
        },
        .value("--read-rate", valueName: "BYTES_PER_SECOND", help: "fault: read each connection at most this fast") { options, value throws(UsageError) in
            options.faults.readBytesPerSecond = try count(value, option: "--read-rate", minimum: 1)
        },
        .value("--stall-after", valueName: "BYTES", help: "fault: stop reading the first request at BYTES body bytes") { options, value throws(UsageError) in
            options.faults.stallAfterBytes = try count(value, option: "--stall-after", minimum: 0)
        },
        .value("--forget-uploads-after", valueName: "SIZE", help: "fault: forget all resumable uploads once SIZE of their bytes arrived") { options, value throws(UsageError) in
            options.faults.forgetUploadsAfterBytes = try parseByteSize(value, option: "--forget-uploads-after")
        },
        .flag("-h", "--help", help: "show this help") { _ in },
    ]

    static let help = """
        usage: streamup sink [options]

        Runs a local HTTP/1.1 server that receives uploads (chunked or with Content-Length) and
        answers each with 200 and a JSON summary: {"bytes":N,"sha256":"..."}. The first line on
        stdout is `listening on http://HOST:PORT`; then one line per request:
        METHOD PATH BYTES SECONDS STATUS [FILE] [upload-offset=N]. SIGINT or SIGTERM stops it.

        options:
        \(helpLines(for: table))
        With --output, bodies are stored as DIR/NNNNNN-METHOD.body in arrival order; a body whose
        client went away before its end is kept as .partial, never as a complete body.
        Limits: 16 KiB of request head, 1 KiB per chunk-size line; malformed requests get 400
        and the connection is closed.

        Streams: with --output, a request carrying `Streamup-Stream-Id: ID` and
        `Streamup-Offset: N` (offset of its first body byte in the stream) is merged into
        DIR/stream-ID.body: bytes already there are dropped, new ones appended once the body is
        complete; a body starting past the end gets 409 {"expected_offset":LEN}. The response
        JSON carries "stream_offset": the stream file's length after the request.

        Resumable uploads (IETF draft-ietf-httpbis-resumable-upload, interop version 6; 8 is
        accepted too): a POST with `Upload-Draft-Interop-Version: 6` and `Upload-Complete: ?0`
        creates an upload (with `?1` the POST is the whole upload), answered 104 (unless
        --no-104) and 201 with its URL in Location and Upload-Offset; PATCH URL with Upload-Offset, Upload-Complete and Content-Type:
        application/partial-upload appends (201, or 200 and the JSON summary when complete;
        409 with Upload-Offset on a wrong offset or while another connection appends); HEAD URL
        gives the offset (204) and detaches a stale connection; DELETE URL cancels (204).
        Bytes are stored as they arrive, in DIR/upload-TOKEN.partial (.body when complete); a
        creation with the stream headers writes into DIR/stream-ID.body instead, at stream
        offset N + upload offset. Uploads live in memory: a restarted sink answers 404.
        Requests without Upload-Draft-Interop-Version are ordinary requests.

        Faults (for testing senders; all deterministic, none by default): --drop-after resets
        the connection (no response, body kept as .partial), once, or with --drop-every each
        time another BYTES have arrived; --lose-answers stores a request and then resets the
        connection instead of answering 200; --fail-next answers a JSON error
        after reading the body; --read-rate sleeps between reads; --stall-after holds the
        connection open without reading until --idle-timeout or SIGINT; --forget-uploads-after
        forgets every resumable upload once SIZE of their bytes have arrived (once), as a
        restart would, and resets the connection carrying that byte. The byte faults cut PATCH
        bodies too; the upload keeps the bytes received.
        """

    /// A whole number of at least `minimum`, or a usage error naming `option`.
    private static func count(_ value: String, option: String, minimum: Int) throws(UsageError) -> Int {
        guard let number = Int(value), number >= minimum else {
            throw UsageError("\(option): '\(value)' is not a whole number >= \(minimum)")
        }
        return number
    }
}

/// Runs the sink command.
///
/// Thread safety: runs on the main task; the sink's callbacks only print.
enum SinkRunner {
    static func run(_ options: SinkOptions) async -> Int32 {
        var configuration = SinkConfiguration()
        configuration.host = options.host
        configuration.port = options.port
        configuration.outputDirectory = options.outputDirectory
        configuration.maxConnections = options.maxConnections
        configuration.idleTimeout = options.idleTimeout
        configuration.hashBodies = options.hashBodies
        configuration.faults = options.faults
        configuration.sendsUploadResumptionSupported = options.sendsUploadResumptionSupported
        let server: SinkServer
        do {
            server = try SinkServer(configuration: configuration, onEvent: logLine)
            server.start()
        } catch {
            Terminal.error("sink: \(error)")
            return ExitStatus.noAnswer
        }
        Terminal.log("listening on \(server.url.absoluteString.trimmingSuffix("/"))")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            SignalHandling.install { continuation.resume() }
        }
        server.stop()
        return ExitStatus.success
    }

    @Sendable private static func logLine(_ event: SinkRequestEvent) {
        let seconds = String(format: "%.3f", event.duration.seconds)
        var line = "\(event.method) \(event.path) \(event.bodyByteCount) \(seconds) \(event.status)"
        if let file = event.storedFile { line += " \(file)" }
        if let offset = event.uploadOffset { line += " upload-offset=\(offset)" }
        if !event.isComplete { line += " incomplete" + (event.failure.map { ": \($0)" } ?? "") }
        Terminal.log(line)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
