/// `streamup help TOPIC`: what `--help` has no room for, one page per topic, each line within
/// ``HelpLayout/width`` columns. A new topic is one case and its text.
///
/// Thread safety: a value type.
enum HelpTopic: String, CaseIterable, Sendable {
    case delivery
    case endpoints
    case records
    case receivers
    case secrets
    case metrics
    case exit

    /// The lines `--help` ends with, naming every topic and the other commands' help.
    static var index: String {
        let names = allCases.map(\.rawValue).joined(separator: ", ")
        let text = "More: `streamup help TOPIC` (\(names)), and `streamup tail|heartbeat|journal|run|sink --help`."
        return HelpLayout.wrap(text, within: HelpLayout.width).joined(separator: "\n")
    }

    /// `streamup help` alone, or with a topic; an unknown topic is a usage error naming them.
    static func page(_ arguments: [String]) throws(UsageError) -> String {
        guard let name = arguments.first else { return UploadOptions.help }
        guard arguments.count == 1, let topic = HelpTopic(rawValue: name) else {
            throw UsageError("help: '\(arguments.joined(separator: " "))' is not a topic (\(allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return "streamup help \(topic.rawValue)\n\n" + topic.text
    }

    var text: String {
        switch self {
        case .delivery:
            """
            Each request ("segment") carries whole records (lines, unless --records none) and ends at
            the last line boundary within --segment-bytes (8MiB, at most half the buffer or spool:
            4MiB with the default 8MiB buffer), or at the first one --segment-seconds (1s) after its
            first byte; a request opens only when there is a line to send. Each is a complete body
            with Content-Length, never chunked. A 2xx acknowledges it. A --segment-bytes over half
            the buffer is refused, and the buffer (--buffer-size, or --spool-size) must hold one
            record (--max-record). --response-timeout bounds connecting, waiting for the answer after
            the body, and the whole answer once it starts (its first 64 KiB are kept, the rest
            discarded); a quiet input never times out. A 2xx that came before the server read the
            whole body is not delivery: the segment is sent again, up to three times.

            A failed one (connection error, 408, 429, 5xx: --retry-statuses; backoff with jitter up
            to 30 s; Retry-After honoured up to those 30 s and never past --retry-max-time) is sent
            again from the last acknowledged byte, for as long as it takes (one line when delivery
            starts failing, one a minute saying how long and how much is held, one when it
            recovers) unless --retries N in a row without progress or --retry-max-time bound it,
            as the same request again, byte for byte (a receiver that stored it can drop the copy);
            a segment whose connection broke three times in a row goes smaller, so a link that cuts
            every request still delivers. 413, or 429 twice in a row a second or more apart, makes
            every later segment smaller, never below one record: a record alone refused 413 is
            final. Other 4xx, and refusals a preset knows for permanent (ClickHouse's exception
            codes for a wrong table, column or row), and the server's TLS certificate refused (or a
            client certificate it wants and was not given) are final: the stream stops, or with
            --dead-letter DIR the segment is kept in DIR and the stream goes on (so does a segment
            that ran out of retries). Failure lines show the status and the answer's first line.

            Several segments may be out at once (--max-in-flight N, 1 to 256): the next is cut and
            sent while earlier ones wait for their answers, once one at a time cannot keep up (half
            a segment waits; else it waits and carries more). The window starts at one, grows by one
            per window of answers that come back 2xx and no slower, and halves on 429, 503,
            timeouts, broken connections or a window of answers much slower than usual (one slow
            answer among them is not enough). The stream is still acknowledged in
            order (the state file and spool move past a segment only once it and every earlier
            one are answered), and a failed segment is sent again alone. Records may then arrive out of
            order. Default: 8 with --to (the receiver orders records by the time each carries, or
            does not care; Loki takes entries out of order within an hour of a stream's newest,
            so one set to unordered_writes: false needs --max-in-flight 1), but 1 with --to vector
            (its records carry no time) and without --to, so records arrive in the order read.
            Always 1 with -X PUT, --resumable and --single-request, whose receivers need the
            stream in order, and with --dead-letter (offsets leave out what was set aside, so no
            segment may be out past one that could be): an N above 1 with them is refused.

            Each request carries Streamup-Stream-Id and Streamup-Offset so a receiver can drop the
            duplicates a lost answer causes (`streamup sink` does). Each segment is a request of its
            own, also with -X PUT: a server that stores a PUT as a file (WebDAV) keeps only the last.

            --single-request sends one never-ending request instead (VictoriaLogs jsonline,
            ClickHouse, `streamup sink`, curl-like use); a broken connection ends it (exit 2), and a
            2xx before the body ended is no acknowledgement.
            --resumable speaks the IETF resumable-upload protocol (draft interop version 6; e.g.
            `streamup sink` or Apple's NIOResumableUpload): one upload, a PATCH per segment, and
            after a failure a HEAD tells where to go on: nothing lost, nothing sent twice.
            --spool DIR keeps the unacknowledged bytes on disk: a crash or kill loses none of them,
            and the next start with the same DIR sends them first (same stream id and offsets). It
            holds at most --spool-size; a damaged spool is refused, never sent. While its disk is
            full, streamup reads no more input and tries again until a write works (a line each).

            SIGINT/SIGTERM: stop reading the input, send what is buffered, wait for the answers (at
            most --shutdown-timeout); one line on stderr says how many bytes that is. A second
            signal aborts at once (exit 130), with one line saying what was lost or kept (--spool).
            """
        case .endpoints:
            """
            Several URLs are endpoints of one receiver cluster (each with the --to preset's path):

                tail -F app.log | streamup --endpoints balance http://ingest-1/in http://ingest-2/in

            --endpoints failover (the default) sends every segment to the first URL not set aside;
            balance round robin over those. A URL that fails (no answer, 408, 429, 5xx) is set aside
            with a backoff of its own (250 ms doubling to 30 s, or Retry-After) and probed again
            after it; its segment goes to another at once. One line says when a URL is set aside and
            one when it answers again. All set aside: the usual retries. Each endpoint gets a
            gapless Streamup-Offset (stream id ID-from-OFFSET when it starts later in the stream),
            so `streamup sink` de-duplicates as with one URL. Not with --resumable or
            --single-request.
            """
        case .records:
            """
            --format raw sends lines as they are (the default). ndjson makes each line a JSON object
            with the line as a string (--message-key, default message), the time it was read
            (--time-key, default time, RFC 3339 UTC with milliseconds; none leaves it out), the host
            and, for tail, the file path, and the --field KEY=VALUE fields. json passes lines that
            are JSON objects through with those fields merged in (the line's keys win) and wraps the
            others as ndjson does. Control characters are escaped; bytes that are not UTF-8 become
            U+FFFD, one per maximal subpart. ',surrogateescape' (--format ndjson,surrogateescape)
            writes each as \\udcXX instead: lossless for Python, but Loki refuses such a request.

            A record is at most --max-record bytes (1MiB; with --to, the receiver's), escapes
            counted: a longer line is cut into records that fit (raw lines: pieces of that size,
            with one warning).

            --multiline joins lines into one record:
              start=REGEX  a line REGEX matches (Swift Regex, anywhere: anchor it with ^) starts a
                           record, the others continue it
              indented     a line starting with a space or tab continues the one before
              java         frames (at …), '... N more', 'Caused by:', the exception class line
              python       'Traceback (most recent call last):', its frames, chained tracebacks
              go           'panic:'/'fatal error:' and the goroutine dumps after it
            A record ends at the next start, after --multiline-timeout (1s) without a continuation,
            at --multiline-max-lines (500), or before --max-record. Raw, it keeps its newlines; with
            --format or --to it is one message with \\n.

            --parse cri reads Kubernetes' container logs (/var/log/pods/: TIME STREAM P|F MESSAGE,
            P pieces joined until F); --parse docker Docker's json-file lines ({"log","stream",
            "time"}, pieces joined until one ends in a newline). The message becomes the record, its
            time the record's time, stream a field, and for tail namespace, pod and container come
            from the path (with --format or --to).

            --drop REGEX leaves out records whose message REGEX matches (ICU regular expression,
            anywhere in the message); --keep REGEX keeps only those it matches; --redact REGEX
            replaces each match with *** (the whole value is the pattern: --redact 'password=[^ ]*'
            masks password=hunter2 whole); --redact-with TEMPLATE after it replaces with TEMPLATE
            instead ($1 the first group, \\$ a dollar: --redact '(password=)\\S+' --redact-with
            '$1***'). All repeatable, applied in the order given, after --multiline and --parse,
            before the buffer; a left-out line still counts as read for --state, and --metrics
            counts it (streamup_records_dropped_total). A record's rules may take 1s of CPU, 1s
            more per MiB of it; a record they do not finish (a pattern that backtracks, such as
            (a+)+) is sent with its message as ***, counted (streamup_records_masked_total) and
            said on stderr.

            --compress gzip: one gzip member per request; a single request is flushed whenever it
            would wait for input (at least every 250 ms). --multipart FIELD[=FILENAME] sends each
            request as a multipart/form-data form (--form NAME=VALUE fields first) whose file part
            FIELD (file name FILENAME, default stream; its type --content-type) holds the records;
            the random boundary is checked against the records. Not with --resumable.
            """
        case .receivers:
            """
            --to RECEIVER speaks a log receiver's own ingestion API, e.g.

                tail -F app.log | streamup --to loki --label job=app http://loki:3100

            It sets the receiver's usual path (when the URL has none), content type, record shape,
            the document around each request's records, the header a token goes in (--token-file)
            and request and record limits within the receiver's, and reads the records it refuses.
            Options given explicitly win. --label KEY=VALUE names the stream: a Loki label (default
            job=streamup; host is added), a VictoriaLogs stream field, an OTLP resource attribute.
            Up to 8 requests go out at once (not for vector; help delivery), so records may be
            stored out of order: a Loki with unordered_writes: false needs --max-in-flight 1.

            --to otlp sends OTLP/HTTP in protobuf (application/x-protobuf, the default encoding,
            which VictoriaLogs, Elasticsearch and Datadog require); --to otlp-json the same request
            as JSON. Both retry only 429, 502, 503 and 504, as the OTLP specification says.

            Records a receiver refuses while it stores the others (Elasticsearch items, Splunk's
            invalid event, OTLP partial success, Loki's ignored entries) get one line on stderr
            each answer, are kept with --dead-letter DIR, and are not sent again (exit status 1).
            Receivers that read each request whole refuse --single-request; none speaks --resumable.
            """
        case .secrets:
            """
            -u USER with $STREAMUP_PASSWORD, --bearer-token-file, --token-file with --token-header,
            and -H @FILE keep secrets out of argv, ps and shell history. Token and header files are
            read for every request, so a rotated secret is used by the next one; all are read at
            start too (a missing file or empty token: exit 64). Errors name the file, never its
            contents. A field set by two of these is a usage error.

            -v shows Authorization (its scheme word only), cookies, API keys and tokens (by field
            name) as <redacted>, and URLs without their user:password@ and secret query values.

            TLS, as curl: --cacert FILE and --capath DIR (openssl rehash DIR) verify the server
            with a private CA; --cert FILE and --key FILE present a client certificate (mTLS). PEM
            files, unencrypted key; checked at start (unreadable, not PEM, a key that is not the
            certificate's, a certificate out of date: exit 64). Files changed on disk (cert-manager)
            are used from the next connection, without a restart; a certificate caught without its
            new key leaves the last good pair in use. -k is refused: nothing turns verification
            off. A server that wants a client certificate, or refuses the one given, says so in one
            line naming the option; an untrusted server certificate is final, a refused client
            certificate is retried (a renewed file fixes it).
            """
        case .metrics:
            """
            --metrics [ADDR:]PORT serves GET /metrics (Prometheus text format 0.0.4) and GET /health
            on 127.0.0.1 (0.0.0.0:PORT: every address; [::1]:PORT for IPv6; port 0 picks a free one,
            said on stderr). /metrics: lines (those --drop and --keep left out included), bytes
            and records read, delivered and sent again, requests by endpoint and status class,
            request durations (a histogram), retries, dead letters, records refused, buffer fill
            and capacity, the age of the oldest unacknowledged byte, the last success, how long
            delivery has been failing, files followed (tail), streamup_build_info and the
            standard process_* metrics (CPU, memory, open and most files, start time). /health
            answers 200 while delivering or idle, 503 once delivery has failed --unhealthy-after
            (default 60s) without a success, with the last failure as its body. A taken port is
            a usage error (exit 64).
            streamup run --metrics: every pipeline's series with a pipeline="NAME" label, and
            streamup_pipeline_up and streamup_pipeline_state (waiting, starting, running,
            stopping, ended, failed) for each pipeline of the file, ended ones too; /health
            answers 503 naming each pipeline that ended in failure or fails to deliver.
            """
        case .exit:
            """
            exit status of streamup, tail and heartbeat:
              0   every byte was acknowledged with a 2xx; the last answer's body, if any, is
                  printed on stdout (or -o FILE; without URL, the local sink's summary); an empty
                  input sends nothing and exits 0
              1   the server answered another status (one line on stderr: the status and the
                  start of the body, HTML reduced to its words, or a redirect's Location), or
                  segments were kept with --dead-letter, or a receiver (--to) refused records
              2   no answer: refused or lost connection, timeout, retries run out, cancelled,
                  or the shutdown timeout passed
              64  usage error, found before anything is sent (also a bad URL, a closed stdin, a
                  header streamup must set itself, an -o FILE whose directory is missing or not
                  writable)
              74  a file or output failed while running: writing the answer to stdout (closed, or
                  its reader gone) or to -o FILE, the spool, the state file, the local sink; or
                  at start: a spool or state file in use by another streamup or not writable,
                  tail's files all there but none readable
              130 a second SIGINT/SIGTERM (one line says what was lost, or where it is kept)
            SIGHUP (a closed terminal) stops as SIGTERM does: what is held is delivered; a second
            SIGHUP changes nothing. SIGUSR1, SIGUSR2 and SIGALRM are ignored: a stray one never
            stops a shipper. (streamup run: SIGHUP reads its file again; run's statuses are in
            streamup run --help.)
            heartbeat -- COMMAND exits with the command's status (128 + N when signal N ended it,
            127 when it cannot be run). The sink: 0 when stopped, 74 when it cannot start, 64 for
            a usage error. Diagnostics are one line each on stderr; a closed stderr never changes
            the outcome.
            """
        }
    }
}
