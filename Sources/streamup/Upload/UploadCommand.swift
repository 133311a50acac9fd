import Foundation
import StreamUp

/// `streamup [options] [URL...]`: stream stdin to URL as acknowledged segments (or, with
/// `--single-request`, as one chunked request).
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
    /// `--cacert`, `--capath`, `--cert`, `--key`.
    var tls = TLSOptions()
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
        /// `--max-in-flight`: the most requests out at once (nil: by receiver).
        var maxInFlight: Int?
        var spoolDirectory: String?
        var spoolBytes: Int?
        var resumable = false
        var retryStatuses: Set<Int>?
        var deadLetterDirectory: String?
        /// The segment options given (they cannot go with --single-request).
        var segmentOptions: [String] = []
        /// The stream to continue from the state file's positions (`journal --state`; no option).
        var streamID: String?
    }

    static let table: [OptionSpec<UploadOptions>] =
        receiverTable + endpointTable + [
            .value(
                "-H", "--header", valueName: "'NAME: VALUE'|@FILE",
                group: .receivers, help: "add a request header (repeatable); @FILE: read for every request"
            ) { options, value throws(UsageError) in
                guard !value.hasPrefix("@") else {
                    guard value.count > 1 else { throw UsageError("-H @FILE: the file name is empty") }
                    options.auth.headerFiles.append(String(value.dropFirst()))
                    return
                }
                options.headers.append(try parseHeader(value))
            }
        ] + AuthOptions.table.map { $0.lifted(\UploadOptions.auth) } + [
            .value("--content-type", valueName: "TYPE", group: .receivers, help: "Content-Type of the body (default application/octet-stream)") {
                options, value in
                options.contentType = value
                options.given.insert("--content-type")
            },
            .value(
                "-X", "--method", valueName: "METHOD",
                group: .receivers,
                help: "POST (default), PUT or PATCH; each segment is a request of its own: a server that stores a PUT as a file keeps the last"
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
                group: .input, help: "what is held until acknowledged (default 8MiB); the input waits"
            ) { options, value throws(UsageError) in
                let size = try parseByteSize(value, option: "--buffer-size")
                guard size <= 1 << 30 else { throw UsageError("--buffer-size: '\(value)' is over 1 GiB") }
                options.bufferSize = size
            },
            .value(
                "--response-timeout", valueName: "DURATION",
                group: .delivery, help: "limit on connecting, waiting for and reading the answer (default 60s)"
            ) { options, value throws(UsageError) in
                options.responseTimeout = try parseDuration(value, option: "--response-timeout")
            },
            .value(
                "--format", valueName: "raw|ndjson|json[,surrogateescape]",
                group: .records, help: "raw (default); ndjson: a JSON object per line (streamup help records)"
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
            .value("--field", valueName: "KEY=VALUE", group: .records, help: "add a string field to every record (repeatable)") {
                options, value throws(UsageError) in
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex else { throw UsageError("--field: '\(value)' is not KEY=VALUE") }
                options.records.fields.append((String(value[..<equals]), String(value[value.index(after: equals)...])))
            },
            .value("--message-key", valueName: "KEY", group: .records, help: "the key of the line in a record (default message; e.g. _msg, log)") {
                options, value throws(UsageError) in
                guard !value.isEmpty else { throw UsageError("--message-key: the key cannot be empty") }
                options.records.keys.message = value
                options.records.given.insert("--message-key")
            },
            .value(
                "--time-key", valueName: "KEY|none",
                group: .records, help: "the key of the time the line was read (default time; none: no time)"
            ) { options, value throws(UsageError) in
                guard !value.isEmpty else { throw UsageError("--time-key: the key cannot be empty (none leaves the time out)") }
                options.records.keys.time = value == "none" ? nil : value
                options.records.given.insert("--time-key")
            },
            .value(
                "--multiline", valueName: "start=REGEX|indented|java|python|go",
                group: .input, help: "join lines into one record: a stack trace (streamup help records)"
            ) { options, value throws(UsageError) in
                do {
                    options.records.multilineKind = try MultilineRule(parsing: value).kind
                } catch {
                    throw UsageError("\(error)")
                }
            },
            .value(
                "--multiline-timeout", valueName: "DURATION", group: .input, help: "send a multiline record after this long without more (default 1s)"
            ) { options, value throws(UsageError) in
                let timeout = try parseDuration(value, option: "--multiline-timeout")
                guard timeout > .zero else { throw UsageError("--multiline-timeout: '\(value)' must be positive") }
                options.records.multilineTimeout = timeout
            },
            .value(
                "--multiline-max-lines", valueName: "N",
                group: .input, help: "the most lines of one multiline record (default 500)"
            ) { options, value throws(UsageError) in
                guard let count = Int(value), count >= 1 else { throw UsageError("--multiline-max-lines: '\(value)' is not a number of at least 1") }
                options.records.multilineMaxLines = count
            },
            .value(
                "--parse", valueName: "cri|docker",
                group: .input, help: "lines are a container runtime's: cri (Kubernetes) or docker"
            ) { options, value throws(UsageError) in
                guard let format = ContainerLogFormat(rawValue: value) else { throw UsageError("--parse: '\(value)' is not cri or docker") }
                options.records.parse = format
            },
            .value(
                "--drop", valueName: "REGEX",
                group: .records, help: "leave out records whose message REGEX matches (streamup help records)"
            ) { options, value throws(UsageError) in
                try options.records.addFilterRule(.drop(value))
            },
            .value(
                "--keep", valueName: "REGEX",
                group: .records, help: "keep only records whose message REGEX matches (repeatable)"
            ) { options, value throws(UsageError) in
                try options.records.addFilterRule(.keep(value))
            },
            .value(
                "--redact", valueName: "REGEX",
                group: .records, help: "replace each match in the message with *** (repeatable)"
            ) { options, value throws(UsageError) in
                try options.records.addFilterRule(.redact(value, template: nil))
            },
            .value(
                "--redact-with", valueName: "TEMPLATE",
                group: .records, help: "the text that replaces the previous --redact's matches ($1: a group)"
            ) { options, value throws(UsageError) in
                try options.records.setRedactionTemplate(value)
            },
            .value(
                "--compress", valueName: "gzip",
                group: .records, help: "compress each request with gzip (Content-Encoding: gzip)"
            ) { options, value throws(UsageError) in
                guard value == "gzip" else { throw UsageError("--compress: '\(value)' is not supported (gzip is)") }
                options.gzip = true
            },
        ] + MultipartOptions.table.map { $0.lifted(\UploadOptions.multipart) } + [
            .flag(
                "--single-request",
                group: .delivery, help: "send one never-ending request; a broken connection ends it"
            ) { options in
                options.delivery.singleRequest = true
            },
            .value(
                "--records", valueName: "lines|none",
                group: .input, help: "where a request may end: after a newline (default) or anywhere"
            ) { options, value throws(UsageError) in
                switch value {
                case "lines": options.delivery(\.records, .lines, "--records")
                case "none": options.delivery(\.records, .rawBytes, "--records")
                default: throw UsageError("--records: '\(value)' is not 'lines' or 'none'")
                }
            },
            .value(
                "--max-record", valueName: "SIZE",
                group: .records, help: "the longest record (default 1MiB; --to: the receiver's); cut beyond"
            ) { options, value throws(UsageError) in
                options.delivery(\.maxRecordBytes, try parseByteSize(value, option: "--max-record"), "--max-record")
            },
            .value("--retries", valueName: "N|forever", group: .delivery, help: "retry a failed segment N times without progress (default forever)") {
                options, value throws(UsageError) in
                if value == "forever" {
                    options.delivery(\.retries, .some(nil), "--retries")
                } else {
                    guard let count = Int(value), count >= 0 else { throw UsageError("--retries: '\(value)' is not a number or 'forever'") }
                    options.delivery(\.retries, .some(count), "--retries")
                }
            },
            .value("--retry-max-time", valueName: "DURATION", group: .delivery, help: "give up after failing this long without progress (caps Retry-After)") {
                options, value throws(UsageError) in
                options.delivery(\.retryMaxTime, try parseDuration(value, option: "--retry-max-time"), "--retry-max-time")
            },
            .value(
                "--segment-bytes", valueName: "SIZE",
                group: .delivery, help: "end a request at a record boundary within SIZE (default 8MiB)"
            ) { options, value throws(UsageError) in
                options.delivery(\.segmentBytes, try parseByteSize(value, option: "--segment-bytes"), "--segment-bytes")
            },
            .value(
                "--segment-seconds", valueName: "DURATION", group: .delivery, help: "end a request this long after its first byte (default 1s)"
            ) { options, value throws(UsageError) in
                options.delivery(\.segmentDuration, try parseDuration(value, option: "--segment-seconds"), "--segment-seconds")
            },
            .value(
                "--max-in-flight", valueName: "N", group: .delivery, help: "up to N requests at once, adapting (8 with --to but vector, else 1)"
            ) { options, value throws(UsageError) in
                guard let count = Int(value), (1...256).contains(count) else { throw UsageError("--max-in-flight: '\(value)' is not a number from 1 to 256") }
                options.delivery(\.maxInFlight, count, "--max-in-flight")
            },
            .value(
                "--retry-statuses", valueName: "LIST", group: .delivery,
                help: "answers retried (408,429,500-599; otlp: 429,502-504); others are final"
            ) {
                options, value throws(UsageError) in
                options.delivery(\.retryStatuses, try parseStatusList(value), "--retry-statuses")
            },
            .flag(
                "--resumable",
                group: .delivery, help: "append to one IETF resumable upload, going on where the server is"
            ) { options in
                options.delivery(\.resumable, true, "--resumable")
            },
            .value(
                "--spool", valueName: "DIR",
                group: .delivery, help: "keep unacknowledged bytes in DIR: they survive a crash or restart"
            ) { options, value in
                options.delivery(\.spoolDirectory, value, "--spool")
            },
            .value(
                "--spool-size", valueName: "SIZE",
                group: .delivery, help: "most bytes the spool holds (default 1GiB or half the free space)"
            ) { options, value throws(UsageError) in
                options.delivery(\.spoolBytes, try parseByteSize(value, option: "--spool-size"), "--spool-size")
            },
            .value(
                "--dead-letter", valueName: "DIR",
                group: .delivery, help: "keep what is refused for good in DIR and go on (default: stop)"
            ) { options, value in
                options.delivery(\.deadLetterDirectory, value, "--dead-letter")
            },
            .value(
                "--shutdown-timeout", valueName: "DURATION",
                group: .delivery, help: "after SIGINT/SIGTERM, wait this long for the answers (default 30s)"
            ) { options, value throws(UsageError) in
                options.shutdownTimeout = try parseDuration(value, option: "--shutdown-timeout")
            },
            .value("-o", "--output", valueName: "FILE", group: .output, help: "write a 2xx answer's body to FILE instead of stdout (- is stdout)") {
                options, value in
                options.outputFile = value == "-" ? nil : value
            },
        ] + MetricsOptions.table.map { $0.lifted(\UploadOptions.metrics) } + TLSOptions.table.map { $0.lifted(\UploadOptions.tls) } + [
            .flag("-v", "--verbose", group: .output, help: "print each request, answer and retry on stderr") { $0.verbose = true },
            .flag("--progress", group: .output, help: "show the progress meter even when stderr is not a terminal") { $0.progress = true },
            .flag("--no-progress", group: .output, help: "never show the progress meter") { $0.progress = false },
        ] + OptionSpec.helpAndVersion

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
        if records.filter != nil && delivery.records == .rawBytes {
            throw UsageError("--drop, --keep and --redact act on records of lines: they cannot go with --records none")
        }
        if records.effectiveFormat != .raw && delivery.records == .rawBytes {
            throw UsageError("--format \(records.effectiveFormat.rawValue) makes records of lines: it cannot go with --records none")
        }
        if delivery.singleRequest, let first = delivery.segmentOptions.first {
            throw UsageError("--single-request cannot go with \(first): it sends one request, without segments or retries")
        }
        try validateWindow()
        try validateSegmentFits()
        try auth.validate(literalHeaders: headers)
        try tls.validate()
        try multipart.validate(resumable: delivery.resumable, headers: headers)
    }

    /// `--max-in-flight` above 1 with an option that keeps one request out is refused, not
    /// silently lowered.
    private func validateWindow() throws(UsageError) {
        guard let most = delivery.maxInFlight, most > 1 else { return }
        let reason: String? =
            if delivery.deadLetterDirectory != nil {
                "--dead-letter (offsets leave out what it sets aside, so no request may be out past one it could)"
            } else if delivery.resumable {
                "--resumable (one upload, appended in order)"
            } else if method.uppercased() == "PUT" {
                "-X PUT (one resource, written in order)"
            } else {
                nil
            }
        if let reason { throw UsageError("--max-in-flight \(most) cannot go with \(reason): it sends one request at a time") }
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
               streamup journal [options] [URL...]
               streamup run [--metrics [ADDR:]PORT] FILE
               streamup sink [options]
               streamup help [TOPIC] | --help | --version

        Streams standard input to URL, live, as acknowledged HTTP requests of whole lines. A failed
        request is sent again: nothing is lost; a full buffer pauses the reading of stdin. Without
        URL, stdin goes to a local sink, which prints what it stored.

            tail -F app.log | streamup --to loki --label job=app http://loki:3100

        \(helpLines(for: table))
        \(HelpText.units)

        \(HelpText.uploadExitStatuses(success: "every byte was acknowledged with a 2xx (the last answer's body on stdout)"))

        \(HelpTopic.index)
        """
}
