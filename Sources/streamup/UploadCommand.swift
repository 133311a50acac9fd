import Foundation
import StreamUp

/// `streamup [options] [URL]`: stream stdin to URL as one chunked request.
///
/// Thread safety: a value type.
struct UploadOptions: Sendable, Equatable {
    /// nil: stream to an embedded local sink and print what it received.
    var url: String?
    /// The URLs after the first: several endpoints (EndpointOptions.swift).
    var moreURLs: [String] = []
    /// `--endpoints failover|balance` (nil: not given; failover).
    var endpointChoice: EndpointChoice?
    var method = "POST"
    var contentType = "application/octet-stream"
    var headers: [UploadConfiguration.Header] = []
    /// The buffer between the producer and the upload; nil: 1 MiB for a single request,
    /// 8 MiB (the replay buffer) for acknowledged segments.
    var bufferSize: Int?
    var verbose = false
    /// `--progress` (true), `--no-progress` (false), or a meter only on a terminal (nil).
    var progress: Bool?
    var responseTimeout: Duration = .seconds(60)
    /// `--shutdown-timeout`; nil: ``defaultShutdownTimeout`` (a heartbeat's job: its own default).
    var shutdownTimeout: Duration?
    static let defaultShutdownTimeout: Duration = .seconds(30)
    /// `-o FILE`: where a 2xx answer's body goes (nil: stdout).
    var outputFile: String?
    /// How lines become records (`--format`, `--field`, keys).
    var records = RecordOptions()
    /// `--compress gzip`.
    var gzip = false
    /// `-u`, token files, `-H @FILE` (AuthOptions.swift).
    var auth = AuthOptions()
    /// `--multipart`, `--form` (MultipartOptions.swift).
    var multipart = MultipartOptions()
    var delivery = DeliveryOptions()
    /// `--metrics`, `--unhealthy-after` (MetricsOptions.swift).
    var metrics = MetricsOptions()
    /// The request options given on the command line (a preset's values give way to them).
    var given: Set<String> = []

    /// How the stream is delivered: acknowledged segments (the default) or one request.
    struct DeliveryOptions: Sendable, Equatable {
        var singleRequest = false
        var records: RecordMode = .lines
        var maxRecordBytes: Int?
        var retries: Int?? = nil
        var retryMaxTime: Duration?
        var segmentBytes: Int?
        var segmentDuration: Duration?
        var spoolDirectory: String?
        var spoolBytes: Int?
        var resumable = false
        var retryStatuses: Set<Int>?
        var deadLetterDirectory: String?
        /// The segment options given (they cannot go with --single-request).
        var segmentOptions: [String] = []
    }

    static let table: [OptionSpec<UploadOptions>] =
        receiverTable + endpointTable + [
            .value(
                "-H", "--header", valueName: "'NAME: VALUE'|@FILE",
                help:
                    "add a request header (repeatable); @FILE: the fields in FILE, one 'Name: value' per line, read for every request (keeps secrets out of argv and ps)"
            ) { options, value throws(UsageError) in
                guard !value.hasPrefix("@") else {
                    guard value.count > 1 else { throw UsageError("-H @FILE: the file name is empty") }
                    options.auth.headerFiles.append(String(value.dropFirst()))
                    return
                }
                options.headers.append(try parseHeader(value))
            }
        ] + AuthOptions.table.map { $0.lifted(\UploadOptions.auth) } + [
            .value("--content-type", valueName: "TYPE", help: "Content-Type of the body (default application/octet-stream)") { options, value in
                options.contentType = value
                options.given.insert("--content-type")
            },
            .value(
                "-X", "--method", valueName: "METHOD",
                help:
                    "POST (default), PUT or PATCH; each segment is a request of its own: a server that stores a PUT as a file (WebDAV) keeps only the last one (--single-request sends one)"
            ) { options, value throws(UsageError) in
                let method = value.uppercased()
                guard method == "POST" || method == "PUT" || method == "PATCH" else {
                    throw UsageError("--method: '\(value)' is not supported; a streamed body goes with POST, PUT or PATCH")
                }
                options.method = method
                options.given.insert("--method")
            },
            .value(
                "--buffer-size", valueName: "SIZE",
                help:
                    "the buffer between the input and the upload, holding what is not yet acknowledged (default 8MiB; 1MiB with --single-request); the input waits when it is full; it must hold one record (--max-record), and segments are at most half of it"
            ) { options, value throws(UsageError) in
                let size = try parseByteSize(value, option: "--buffer-size")
                guard size <= 1 << 30 else { throw UsageError("--buffer-size: '\(value)' is over 1 GiB") }
                options.bufferSize = size
            },
            .value(
                "--response-timeout", valueName: "DURATION",
                help: "limit on connecting and on waiting for the answer after the body (default 60s); a quiet input never times out"
            ) { options, value throws(UsageError) in
                options.responseTimeout = try parseDuration(value, option: "--response-timeout")
            },
            .value(
                "--format", valueName: "raw|ndjson|json[,surrogateescape]",
                help:
                    "raw: lines as they are (default); ndjson: each line becomes a JSON object with the line as a string (message), the time it was read, the host and, for tail, the file path; json: lines that are JSON objects get those fields merged in, others are wrapped as with ndjson. Bytes that are not UTF-8 become U+FFFD; ',surrogateescape' writes each as \\udcXX instead (lossless, for receivers that keep lone surrogates)"
            ) { options, value throws(UsageError) in
                let parts = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard let format = RecordFormat(rawValue: parts[0]) else { throw UsageError("--format: '\(value)' is not raw, ndjson or json") }
                if parts.count == 2 {
                    guard parts[1] == RecordFormatter.InvalidUTF8.surrogateEscape.rawValue else {
                        throw UsageError("--format: '\(parts[1])' is not 'surrogateescape' (the one choice after a comma)")
                    }
                    guard format != .raw else { throw UsageError("--format raw sends lines as they are: ',surrogateescape' needs ndjson or json") }
                    options.records.invalidUTF8 = .surrogateEscape
                }
                options.records.format = format
                options.records.given.insert("--format")
            },
            .value("--field", valueName: "KEY=VALUE", help: "add a string field to every record (repeatable; with --format ndjson or json)") {
                options, value throws(UsageError) in
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex else { throw UsageError("--field: '\(value)' is not KEY=VALUE") }
                options.records.fields.append((String(value[..<equals]), String(value[value.index(after: equals)...])))
            },
            .value("--message-key", valueName: "KEY", help: "the key of the line in a record (default message; e.g. _msg, log)") {
                options, value throws(UsageError) in
                guard !value.isEmpty else { throw UsageError("--message-key: the key cannot be empty") }
                options.records.keys.message = value
                options.records.given.insert("--message-key")
            },
            .value(
                "--time-key", valueName: "KEY|none",
                help: "the key of the time the line was read, RFC 3339 UTC with milliseconds (default time; e.g. _time, @timestamp, date); none leaves it out"
            ) { options, value throws(UsageError) in
                guard !value.isEmpty else { throw UsageError("--time-key: the key cannot be empty (none leaves the time out)") }
                options.records.keys.time = value == "none" ? nil : value
                options.records.given.insert("--time-key")
            },
            .value(
                "--multiline", valueName: "start=REGEX|indented|java|python|go",
                help:
                    "join lines into one record: start=REGEX: a line REGEX matches (Swift Regex, anywhere in the line; anchor with ^) starts a record, the others continue it; indented: a line starting with a space or tab continues the one before; java, python, go: their stack traces (at …, Caused by:, Traceback (most recent call last):, goroutine N [running]:) are one record. The record keeps its newlines (raw), or is one message with \\n (ndjson, json, --to)"
            ) { options, value throws(UsageError) in
                do {
                    options.records.multilineKind = try MultilineRule(parsing: value).kind
                } catch {
                    throw UsageError("\(error)")
                }
            },
            .value(
                "--multiline-timeout", valueName: "DURATION", help: "with --multiline: a record goes out after this long without a continuation (default 1s)"
            ) { options, value throws(UsageError) in
                let timeout = try parseDuration(value, option: "--multiline-timeout")
                guard timeout > .zero else { throw UsageError("--multiline-timeout: '\(value)' must be positive") }
                options.records.multilineTimeout = timeout
            },
            .value(
                "--multiline-max-lines", valueName: "N",
                help: "with --multiline: the most lines of one record (default 500; --max-record bounds its bytes); the next line starts a new record"
            ) { options, value throws(UsageError) in
                guard let count = Int(value), count >= 1 else { throw UsageError("--multiline-max-lines: '\(value)' is not a number of at least 1") }
                options.records.multilineMaxLines = count
            },
            .value(
                "--parse", valueName: "cri|docker",
                help:
                    "lines are a container runtime's: cri (Kubernetes, /var/log/pods/: TIME STREAM P|F MESSAGE, P pieces joined until F) or docker (json-file: {\"log\",\"stream\",\"time\"}, pieces joined until one ends in a newline); the message becomes the record, its time the record's time, stream a field, and for tail namespace, pod and container fields from the path (with --format or --to)"
            ) { options, value throws(UsageError) in
                guard let format = ContainerLogFormat(rawValue: value) else { throw UsageError("--parse: '\(value)' is not cri or docker") }
                options.records.parse = format
            },
            .value(
                "--compress", valueName: "gzip",
                help:
                    "compress each request with gzip (Content-Encoding: gzip): one gzip member per request; a single request is flushed whenever it would wait for input"
            ) { options, value throws(UsageError) in
                guard value == "gzip" else { throw UsageError("--compress: '\(value)' is not supported (gzip is)") }
                options.gzip = true
            },
        ] + MultipartOptions.table.map { $0.lifted(\UploadOptions.multipart) } + [
            .flag(
                "--single-request",
                help:
                    "send the whole stream as one never-ending request (for receivers that take one, such as VictoriaLogs /insert/jsonline or `streamup sink`); a broken connection then ends it"
            ) { options in
                options.delivery.singleRequest = true
            },
            .value(
                "--records", valueName: "lines|none",
                help: "where records end: every request ends just after a newline (lines, the default) or anywhere (none: opaque bytes)"
            ) { options, value throws(UsageError) in
                switch value {
                case "lines": options.delivery(\.records, .lines, "--records")
                case "none": options.delivery(\.records, .rawBytes, "--records")
                default: throw UsageError("--records: '\(value)' is not 'lines' or 'none'")
                }
            },
            .value(
                "--max-record", valueName: "SIZE",
                help:
                    "the longest record, escapes included (default 1MiB; with --to, the receiver's: README Receivers); a longer line is cut into records that fit (raw lines: pieces of that size, with one warning)"
            ) { options, value throws(UsageError) in
                options.delivery(\.maxRecordBytes, try parseByteSize(value, option: "--max-record"), "--max-record")
            },
            .value("--retries", valueName: "N|forever", help: "retry a failed segment N times in a row without progress (default 10)") {
                options, value throws(UsageError) in
                if value == "forever" {
                    options.delivery(\.retries, .some(nil), "--retries")
                } else {
                    guard let count = Int(value), count >= 0 else { throw UsageError("--retries: '\(value)' is not a number or 'forever'") }
                    options.delivery(\.retries, .some(count), "--retries")
                }
            },
            .value("--retry-max-time", valueName: "DURATION", help: "give up after failing this long without progress") { options, value throws(UsageError) in
                options.delivery(\.retryMaxTime, try parseDuration(value, option: "--retry-max-time"), "--retry-max-time")
            },
            .value(
                "--segment-bytes", valueName: "SIZE",
                help:
                    "end each request at the last record boundary within SIZE (default 8MiB, lowered to half the buffer or spool when that is less: 4MiB with the default buffer; a larger SIZE than half is refused)"
            ) { options, value throws(UsageError) in
                options.delivery(\.segmentBytes, try parseByteSize(value, option: "--segment-bytes"), "--segment-bytes")
            },
            .value(
                "--segment-seconds", valueName: "DURATION", help: "end each request at the first record boundary this long after its first byte (default 1s)"
            ) { options, value throws(UsageError) in
                options.delivery(\.segmentDuration, try parseDuration(value, option: "--segment-seconds"), "--segment-seconds")
            },
            .value("--retry-statuses", valueName: "LIST", help: "answers retried, e.g. 408,429,500-599 (the default); other 4xx/5xx are final") {
                options, value throws(UsageError) in
                options.delivery(\.retryStatuses, try parseStatusList(value), "--retry-statuses")
            },
            .flag(
                "--resumable",
                help:
                    "append the stream to one IETF resumable upload (draft interop version 6): after a failure, ask the server how much it holds and go on from there, no byte sent twice"
            ) { options in
                options.delivery(\.resumable, true, "--resumable")
            },
            .value(
                "--spool", valueName: "DIR",
                help: "keep unacknowledged bytes in DIR instead of memory; they survive a crash, and the next start sends them first"
            ) { options, value in
                options.delivery(\.spoolDirectory, value, "--spool")
            },
            .value(
                "--spool-size", valueName: "SIZE",
                help:
                    "most unacknowledged bytes the spool holds (default 1GiB or half the free space of its file system, whichever is smaller); the input waits beyond it; it must hold one record (--max-record), and segments are at most half of it"
            ) { options, value throws(UsageError) in
                options.delivery(\.spoolBytes, try parseByteSize(value, option: "--spool-size"), "--spool-size")
            },
            .value(
                "--dead-letter", valueName: "DIR",
                help:
                    "keep segments the server refuses for good (4xx other than 408/429, TLS certificate errors) or that run out of retries in DIR, and go on (default: stop); with --to, also the single records a receiver refuses"
            ) { options, value in
                options.delivery(\.deadLetterDirectory, value, "--dead-letter")
            },
            .value(
                "--shutdown-timeout", valueName: "DURATION",
                help: "after SIGINT/SIGTERM, wait at most this long for the rest to be sent and answered (default 30s), then exit 2"
            ) { options, value throws(UsageError) in
                options.shutdownTimeout = try parseDuration(value, option: "--shutdown-timeout")
            },
            .value("-o", "--output", valueName: "FILE", help: "write a 2xx answer's body to FILE instead of stdout (- is stdout; without URL: the summary)") {
                options, value in
                options.outputFile = value == "-" ? nil : value
            },
        ] + MetricsOptions.table.map { $0.lifted(\UploadOptions.metrics) } + TLSOptions.table() + [
            .flag("-v", "--verbose", help: "print each request, answer and retry, and the counts every second, on stderr") { $0.verbose = true },
            .flag("--progress", help: "show the progress meter even when stderr is not a terminal (one line a second)") { $0.progress = true },
            .flag("--no-progress", help: "never show the progress meter (by default it shows when stderr is a terminal)") { $0.progress = false },
            .flag("-h", "--help", help: "show this help") { _ in },
            .flag("-V", "--version", help: "print streamup's version") { _ in },
        ]

    /// Sets one option of acknowledged delivery, remembering that `name` was given.
    mutating func delivery<Value>(_ field: WritableKeyPath<DeliveryOptions, Value>, _ value: Value, _ name: String) {
        delivery[keyPath: field] = value
        if !delivery.segmentOptions.contains(name) { delivery.segmentOptions.append(name) }
    }

    /// Checks the options together, after parsing.
    func validate() throws(UsageError) {
        try validateReceiver()
        try validateEndpoints()
        if records.effectiveFormat == .raw && (!records.fields.isEmpty || records.keys != RecordFormatter.Keys()) {
            throw UsageError("--field, --message-key and --time-key shape records: add --format ndjson or --format json")
        }
        if records.multilineKind == nil && (records.multilineTimeout != nil || records.multilineMaxLines != nil) {
            throw UsageError("--multiline-timeout and --multiline-max-lines shape multiline records: add --multiline")
        }
        if (records.multilineKind != nil || records.parse != nil) && delivery.records == .rawBytes {
            throw UsageError("\(records.parse != nil ? "--parse" : "--multiline") makes records of lines: it cannot go with --records none")
        }
        if records.effectiveFormat != .raw && delivery.records == .rawBytes {
            throw UsageError("--format \(records.effectiveFormat.rawValue) makes records of lines: it cannot go with --records none")
        }
        if delivery.singleRequest, let first = delivery.segmentOptions.first {
            throw UsageError("--single-request cannot go with \(first): it sends one request, without segments or retries")
        }
        try validateSegmentFits()
        try auth.validate(literalHeaders: headers)
        try multipart.validate(resumable: delivery.resumable, headers: headers)
    }

    /// A `--segment-bytes` over half the buffer or spool it is sent from is refused rather
    /// than lowered (a segment size nobody chose is lowered by the library, silently).
    private func validateSegmentFits() throws(UsageError) {
        guard !delivery.singleRequest, let segmentBytes = delivery.segmentBytes else { return }
        let spooled = delivery.spoolDirectory != nil
        let option = spooled ? "--spool-size" : "--buffer-size"
        // The default spool size depends on the free space: the library lowers segments to it.
        guard let capacity = spooled ? delivery.spoolBytes : bufferSize ?? Self.defaultBufferSize else { return }
        let fitting = StreamUploader.segmentBytes(segmentBytes, capacity: capacity)
        guard fitting < segmentBytes else { return }
        throw UsageError(
            "--segment-bytes \(byteText(segmentBytes)) does not fit \(option) \(byteText(capacity)): a segment is at most half of it, so the next one fills while one is sent; use --segment-bytes \(byteText(fitting)) or less, or a larger \(option)"
        )
    }

    /// The memory buffer of acknowledged delivery without `--buffer-size` (the library's).
    static var defaultBufferSize: Int? {
        guard case .memory(let capacity) = StreamUploader.Options().storage else { return nil }
        return capacity
    }

    /// `408,429,500-599`: status codes and ranges, each within 400...599.
    static func parseStatusList(_ text: String) throws(UsageError) -> Set<Int> {
        var statuses: Set<Int> = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = item.split(separator: "-", maxSplits: 1).map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let low = bounds.first ?? nil, let high = bounds.last ?? nil, 400 <= low, low <= high, high <= 599 else {
                throw UsageError("--retry-statuses: '\(item)' is not a status or range within 400-599 (e.g. 408,429,500-599)")
            }
            statuses.formUnion(low...high)
        }
        return statuses
    }

    static func parseHeader(_ text: String) throws(UsageError) -> UploadConfiguration.Header {
        // A field whose name looks secret is echoed without its value.
        var shown = UploadConfiguration.Header.escaped(text)
        guard let colon = text.firstIndex(of: ":") else {
            if let word = text.split(whereSeparator: \.isWhitespace).first, SecretRedaction.isSecret(fieldName: String(word)) {
                shown = UploadConfiguration.Header.escaped(String(word)) + " " + SecretRedaction.placeholder
            }
            throw UsageError("-H: '\(shown)' is not 'Name: value'")
        }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        if SecretRedaction.isSecret(fieldName: name) {
            shown = UploadConfiguration.Header.escaped("\(name): \(SecretRedaction.value(ofField: name, value))")
        }
        guard !name.isEmpty, !name.contains(" ") else { throw UsageError("-H: '\(shown)' has no valid header name") }
        let header = UploadConfiguration.Header(name: name, value: value)
        // The library's rule (UploadConfiguration+Headers.swift): framing fields, controls.
        if let problem = header.problem { throw UsageError("-H: '\(shown)': \(problem)") }
        return header
    }

    static let help = """
        usage: streamup [options] [URL...]
               streamup tail [options] PATTERN... [URL...]
               streamup heartbeat [options] [URL...] [-- COMMAND ...]
               streamup sink [options]
               streamup --help | --version

        Streams standard input to URL, live, as a series of acknowledged HTTP requests that each
        end on a line boundary: what most receivers (ClickHouse, Loki, Elasticsearch, Splunk,
        Vector, …) need, and what reverse proxies let through. A failed request is sent again,
        so nothing is lost.

            tail -F app.log | streamup https://logs.example/ingest

        Without URL, streamup starts a local sink on 127.0.0.1, streams stdin to it, and prints
        what the sink stored (bytes and SHA-256) on stdout: a dry run.

        options:
        \(helpLines(for: table))
        Delivery: each request ("segment") carries whole records (lines, unless --records none)
        and ends at the last line boundary within --segment-bytes (8MiB, at most half the
        buffer or spool: 4MiB with the default 8MiB buffer), or at the first one
        --segment-seconds (1s) after its first byte; a request opens only when there is a line
        to send. A 2xx acknowledges it. A failed one (connection error, 408, 429, 5xx;
        Retry-After honoured; backoff with jitter) is sent again from the last acknowledged
        byte, smaller each time it fails again (so a link that breaks every N bytes still
        delivers); 413, or 429 twice in a row a second or more apart, makes every later segment
        smaller, never below one record: a record alone refused 413 is final. Other 4xx, and refusals a preset knows
        for permanent (ClickHouse's exception codes for a wrong table, column or row), are
        final: the stream stops, or with --dead-letter DIR the segment is kept in DIR and the
        stream goes on. Failure lines show the status and the answer's first line.
        Each request carries Streamup-Stream-Id and Streamup-Offset so a receiver can drop the
        duplicates a lost answer causes (`streamup sink` does). When the buffer is full,
        streamup stops reading stdin: nothing is dropped.
        --single-request sends one never-ending request instead (VictoriaLogs jsonline,
        ClickHouse, `streamup sink`, curl-like use); a broken connection ends it (exit 2).
        --resumable speaks the IETF resumable-upload protocol instead of separate requests
        (any server that speaks it, e.g. `streamup sink` or Apple's NIOResumableUpload): one
        upload, a PATCH per segment, and after a failure a HEAD tells where to go on.
        Several URLs are endpoints of one receiver cluster (each with the --to preset's path):
        --endpoints failover (the default) sends to the first one not set aside, balance round
        robin over those. One that fails (no answer, 408, 429, 5xx) is set aside with a backoff
        and probed again after it; its segment goes to another at once. All set aside: the
        usual retries. Each endpoint gets a gapless Streamup-Offset (stream id ID-from-OFFSET
        when it starts later in the stream). Not with --resumable or --single-request.
            tail -F app.log | streamup --endpoints balance http://ingest-1/in http://ingest-2/in
        --spool DIR keeps the unacknowledged bytes on disk: a crash or kill loses none of them,
        and the next start with the same DIR sends them first (same stream id and offsets).
        SIGINT/SIGTERM: stop reading stdin, send what is buffered, wait for the answers (at
        most --shutdown-timeout); one line on stderr says how many bytes that is. A second
        signal aborts at once (exit 130), with one line saying what was lost or kept (--spool).

        Secrets: -u USER with $STREAMUP_PASSWORD, --bearer-token-file and -H @FILE keep them out
        of argv; token and header files are read for every request, so a rotated secret is used
        by the next one. -v shows Authorization, cookies, API keys and tokens (by field name)
        and URL passwords as <redacted>.
        Metrics: --metrics 9400 serves GET /metrics (Prometheus text format: lines and bytes
        read, delivered and sent again, requests by endpoint and status class, retries, dead
        letters, buffer fill, age of the oldest unacknowledged byte, last success) and GET /health
        (503 once delivery has failed --unhealthy-after, default 60s) on 127.0.0.1 (README:
        Metrics and health).
        TLS: URLSession on Linux trusts only the system's CA store; trust a private CA with
        `cp ca.crt /usr/local/share/ca-certificates/NAME.crt && update-ca-certificates`.
        There is no --cacert, -k or client certificate (they are refused, not ignored).

        \(HelpText.units)

        \(HelpText.uploadExitStatuses(success: "every byte was acknowledged with a 2xx; the last answer's body, if any, is\n      printed on stdout (or -o FILE)"))

        --to RECEIVER speaks a log receiver's own API (README: Receivers), e.g.
            tail -F app.log | streamup --to loki --label job=app http://loki:3100
        Records a receiver refuses while it stores the others (Elasticsearch items, Splunk's
        invalid event, OTLP partial success, Loki's ignored entries) get one line on stderr
        each answer, are kept with --dead-letter DIR, and are not sent again.

        See `streamup tail --help` (file follower), `streamup heartbeat --help` (heartbeat
        monitor) and `streamup sink --help` (the local sink).
        """
}
