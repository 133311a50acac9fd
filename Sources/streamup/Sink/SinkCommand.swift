import Foundation
import StreamUpHTTP
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
    /// `--max-body`: cap on one body (and on a resumable upload in total); nil for none.
    var maxBodyBytes: Int?
    /// `--head-timeout`: longest a whole request head may take.
    var headTimeout: Duration = .seconds(10)
    /// `--min-body-rate`: bytes per second a body must average while bytes are owed; nil turns it off.
    var minimumBodyBytesPerSecond: Int? = SinkBodyRate.standard.bytesPerSecond
    /// `--body-rate-window`: the rate's window, also its grace at the start of a body.
    var bodyRateWindow: Duration = SinkBodyRate.standard.window
    /// `--max-uploads`: resumable uploads open at once.
    var maxUploads = 1_000
    /// `--upload-expiry`: idle time after which a resumable upload is forgotten.
    var uploadExpiry: Duration = .seconds(3_600)
    /// Send `104 Upload Resumption Supported` on resumable-upload creations (`--no-104` turns it off).
    var sendsUploadResumptionSupported = true
    /// Faults to inject on purpose (`--drop-after`, `--fail-next`, `--read-rate`, `--stall-after`,
    /// `--forget-uploads-after`).
    var faults = SinkFaults.none

    static let table: [OptionSpec<SinkOptions>] =
        [
            .value("--host", valueName: "HOST", group: .server, help: "address to listen on (default 127.0.0.1)") { options, value in
                options.host = value
            },
            .value("-p", "--port", valueName: "PORT", group: .server, help: "port to listen on (default 8080; 0 picks a free one)") {
                options, value throws(UsageError) in
                guard let port = UInt16(value) else { throw UsageError("--port: '\(value)' is not a port number (0-65535)") }
                options.port = port
            },
            .value("-o", "--output", valueName: "DIR", group: .server, help: "store each request body in its own file in DIR (created if missing)") {
                options, value in
                options.outputDirectory = value
            },
            .value("--max-connections", valueName: "N", group: .limits, help: "most connections served at once (default 1024)") {
                options, value throws(UsageError) in
                guard let count = Int(value), count > 0 else { throw UsageError("--max-connections: '\(value)' is not a positive number") }
                options.maxConnections = count
            },
            .value("--idle-timeout", valueName: "DURATION", group: .limits, help: "close a connection silent this long (default 60s)") {
                options, value throws(UsageError) in
                options.idleTimeout = try parseDuration(value, option: "--idle-timeout")
            },
            .value("--head-timeout", valueName: "DURATION", group: .limits, help: "longest a whole request head may take, however slow (default 10s)") {
                options, value throws(UsageError) in
                options.headTimeout = try parseDuration(value, option: "--head-timeout")
            },
            .value("--min-body-rate", valueName: "BYTES_PER_SECOND", group: .limits, help: "slowest a body may arrive while bytes are owed (default 500; off)")
            { options, value throws(UsageError) in
                if value == "off" || value == "0" {
                    options.minimumBodyBytesPerSecond = nil
                } else {
                    options.minimumBodyBytesPerSecond = try count(value, option: "--min-body-rate", minimum: 1)
                }
            },
            .value("--body-rate-window", valueName: "DURATION", group: .limits, help: "window of --min-body-rate, and grace at a body's start (default 10s)") {
                options, value throws(UsageError) in
                options.bodyRateWindow = try parseDuration(value, option: "--body-rate-window")
            },
            .value("--max-body", valueName: "SIZE", group: .limits, help: "largest body or resumable upload; more gets 413 (default: no limit)") {
                options, value throws(UsageError) in
                options.maxBodyBytes = try parseByteSize(value, option: "--max-body")
            },
            .value("--max-uploads", valueName: "N", group: .limits, help: "most resumable uploads open at once; more get 503 (default 1000)") {
                options, value throws(UsageError) in
                options.maxUploads = try count(value, option: "--max-uploads", minimum: 1)
            },
            .value("--upload-expiry", valueName: "DURATION", group: .limits, help: "forget a resumable upload idle this long (default 1h)") {
                options, value throws(UsageError) in
                options.uploadExpiry = try parseDuration(value, option: "--upload-expiry")
            },
            .flag("--no-hash", group: .server, help: "do not compute SHA-256 of bodies (for measuring raw receive speed)") { $0.hashBodies = false },
            .flag(
                "--no-104",
                group: .server, help: "no 104 Upload Resumption Supported (needed behind nginx 1.22)"
            ) {
                $0.sendsUploadResumptionSupported = false
            },
            .value("--drop-after", valueName: "BYTES", group: .faults, help: "reset the first request reaching BYTES body bytes") {
                options, value throws(UsageError) in
                options.faults.dropAfterBytes = try count(value, option: "--drop-after", minimum: 0)
            },
            .flag("--drop-every", group: .faults, help: "with --drop-after, reset again every BYTES (across requests)") {
                $0.faults.dropRepeatedly = true
            },
            .value("--fail-next", valueName: "K", group: .faults, help: "answer the next K requests --fail-status") { options, value throws(UsageError) in
                options.faults.failNextRequests = try count(value, option: "--fail-next", minimum: 0)
            },
            .value("--lose-answers", valueName: "K", group: .faults, help: "store the next K requests, then reset instead of answering") {
                options, value throws(UsageError) in
                options.faults.loseAnswers = try count(value, option: "--lose-answers", minimum: 0)
            },
            .flag("--conflict-forgets", group: .faults, help: "a 409 to a resumable PATCH also forgets the upload") {
                $0.faults.conflictForgetsUpload = true
            },
            .value("--fail-status", valueName: "S", group: .faults, help: "the status for --fail-next, 400-599 (default 503)") {
                options, value throws(UsageError) in
                let status = try count(value, option: "--fail-status", minimum: 400)
                guard status <= 599 else { throw UsageError("--fail-status: '\(value)' is not a status in 400-599") }
                options.faults.failStatus = status
            },
            .value("--retry-after", valueName: "N", group: .faults, help: "Retry-After on failures (default 1 for 503/429)") {
                options, value throws(UsageError) in
                options.faults.retryAfterSeconds = try count(value, option: "--retry-after", minimum: 0)
            },
            .value("--read-rate", valueName: "BYTES_PER_SECOND", group: .faults, help: "read each connection at most this fast") {
                options, value throws(UsageError) in
                options.faults.readBytesPerSecond = try count(value, option: "--read-rate", minimum: 1)
            },
            .value("--stall-after", valueName: "BYTES", group: .faults, help: "stop reading the first request at BYTES body bytes") {
                options, value throws(UsageError) in
                options.faults.stallAfterBytes = try count(value, option: "--stall-after", minimum: 0)
            },
            .value("--forget-uploads-after", valueName: "SIZE", group: .faults, help: "forget all resumable uploads once SIZE of their bytes arrived") {
                options, value throws(UsageError) in
                options.faults.forgetUploadsAfterBytes = try parseByteSize(value, option: "--forget-uploads-after")
            },
        ] + OptionSpec.helpAndVersion

    static let help = """
        usage: streamup sink [options]

        Runs a local HTTP/1.1 server that receives uploads (chunked or with Content-Length) and
        answers each with 200 and a JSON summary: {"bytes":N,"sha256":"..."}. The first line on
        stdout is `listening on http://HOST:PORT`; then one line per request:
        METHOD PATH BYTES SECONDS STATUS [FILE] [upload-offset=N]. SIGINT or SIGTERM stops it.

        \(helpLines(for: table))
        With --output, bodies are stored as DIR/NNNNNNNN-METHOD.body (8-digit arrival number) in
        arrival order; a body whose client went away before its end is kept as .partial, never as
        a complete body. The sink never follows a symbolic link placed in DIR (500 instead).

        Limits (each answer closes the connection): 16 KiB of request head (431) and 1 KiB per
        chunk-size line (400); malformed requests get 400; a transfer coding other than chunked
        gets 501, Transfer-Encoding on HTTP/1.0 gets 400; --max-body gets 413, from the head for a
        Content-Length over it, else once a chunked body passes it (the first SIZE bytes are kept).
        Slow clients: a request head must be complete within --head-timeout, counted from the
        connection's start (for a kept-alive connection, from the request's first byte), else 408.
        A body must average --min-body-rate over --body-rate-window, but only while the client
        owes bytes it announced (the rest of a Content-Length body, or of a chunk it has begun):
        between chunks a live stream may pause as long as --idle-timeout allows, since pausing is
        what live streams do. Slower: 408. When all --max-connections are taken, a new connection
        takes the place of the one that has waited longest for its request head (that one gets
        503 and Retry-After, or is closed if idle between requests); only when every connection
        is inside a request does the new one get 503. Resumable uploads: at most --max-uploads
        open (a creation over it gets 503 and Retry-After); one idle for --upload-expiry is
        forgotten (404), its file removed if empty, else kept as .partial; an idle upload holds
        no open file.

        Streams: with --output, a request carrying `Streamup-Stream-Id: ID` and
        `Streamup-Offset: N` (offset of its first body byte in the stream) is merged into
        DIR/stream-ID.body, which holds only the stream's gapless start: bytes already there are
        dropped, new ones appended once the body is complete. In the file name each byte of ID
        outside A-Z a-z 0-9 - _ is written %XX (p/q: stream-p%2Fq.body), so every id has its own
        file; an id over 128 characters so written, or not UTF-8, gets 400. Bodies may come in any
        order (several in flight): one starting past the end is kept as
        DIR/stream-ID.N-END.NNNNNNNN-METHOD.aside, answered 200, and joins the file when the gap
        before it fills (resends and overlaps dropped by offset); kept across a restart. At most
        64 MiB or 64 bodies aside per stream, and 1 GiB or 1,024 bodies for all streams together;
        past that 503 with Retry-After: 1 and a JSON error saying which (a body the file can take
        always passes). The response JSON carries "stream_offset": the stream file's length after
        the request.

        Resumable uploads (IETF draft-ietf-httpbis-resumable-upload, interop version 6; 8 is
        accepted too): a POST with `Upload-Draft-Interop-Version: 6` and `Upload-Complete: ?0`
        creates an upload (with `?1` the POST is the whole upload), answered 104 (unless
        --no-104) and 201 with its URL in Location and Upload-Offset; PATCH URL with
        Upload-Offset, Upload-Complete and Content-Type: application/partial-upload appends
        (201, or 200 and the JSON summary when complete; 409 with Upload-Offset on a wrong offset
        or while another connection appends); HEAD URL gives the offset (204) and detaches a
        stale connection; DELETE URL cancels (204).
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

        \(HelpText.units)

        Exit status: 0 when stopped by SIGINT or SIGTERM (a second signal exits at once with 130);
        74 when the sink cannot start (the one line on stderr says why and what to do: a port in
        use, an output directory that cannot be created or written); 64 for a usage error.
        """

    /// A whole number of at least `minimum`, or a usage error naming `option`.
    private static func count(_ value: String, option: String, minimum: Int) throws(UsageError) -> Int {
        guard let number = Int(value), number >= minimum else {
            throw UsageError("\(option): '\(value)' is not a whole number >= \(minimum)")
        }
        return number
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
