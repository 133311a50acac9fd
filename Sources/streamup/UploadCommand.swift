import Foundation
import StreamUp

/// `streamup [options] [URL]`: stream stdin to URL as one chunked request.
///
/// Thread safety: a value type.
struct UploadOptions: Sendable, Equatable {
    /// nil: stream to an embedded local sink and print what it received.
    var url: String?
    var method = "POST"
    var contentType = "application/octet-stream"
    var headers: [UploadConfiguration.Header] = []
    var bufferSize = 1 << 20
    var verbose = false
    var responseTimeout: Duration = .seconds(60)
    var shutdownTimeout: Duration = .seconds(30)
    /// `-o FILE`: where a 2xx answer's body goes (nil: stdout).
    var outputFile: String?
    /// Segmented, acknowledged delivery with retries (any of the options below turns it on).
    var delivery: DeliveryOptions?

    /// The options of segmented delivery; nil fields keep the library's defaults.
    struct DeliveryOptions: Sendable, Equatable {
        var retries: Int?? = nil
        var retryMaxTime: Duration?
        var segmentBytes: Int?
        var segmentDuration: Duration?
        var replayBytes: Int?
        var spoolDirectory: String?
        var spoolBytes: Int?
        var resumable = false
        var retryStatuses: Set<Int>?
    }

    static let table: [OptionSpec<UploadOptions>] = [
        .value("-H", "--header", valueName: "'NAME: VALUE'", help: "add a request header (repeatable)") { options, value throws(UsageError) in
            options.headers.append(try parseHeader(value))
        },
        .value("--content-type", valueName: "TYPE", help: "Content-Type of the body (default application/octet-stream)") { options, value in
            options.contentType = value
        },
        .value("-X", "--method", valueName: "METHOD", help: "POST (default), PUT or PATCH") { options, value throws(UsageError) in
            let method = value.uppercased()
            guard method == "POST" || method == "PUT" || method == "PATCH" else {
                throw UsageError("--method: '\(value)' is not supported; a streamed body goes with POST, PUT or PATCH")
            }
            options.method = method
        },
        .value("--buffer-size", valueName: "SIZE", help: "buffer between stdin and the socket (default 1MiB; e.g. 64k, 4MiB)") { options, value throws(UsageError) in
            let size = try parseByteSize(value, option: "--buffer-size")
            guard size <= 1 << 30 else { throw UsageError("--buffer-size: '\(value)' is over 1 GiB") }
            options.bufferSize = size
        },
        .value("--response-timeout", valueName: "DURATION", help: "limit on connecting and on waiting for the answer after the body (default 60s); an idle stdin never times out") { options, value throws(UsageError) in
            options.responseTimeout = try parseDuration(value, option: "--response-timeout")
        },
        .value("--retries", valueName: "N|forever", help: "deliver in acknowledged segments and retry failed ones N times (default 10 once any delivery option is given)") { options, value throws(UsageError) in
            if value == "forever" {
                options.delivery(\.retries, .some(nil))
            } else {
                guard let count = Int(value), count >= 0 else { throw UsageError("--retries: '\(value)' is not a number or 'forever'") }
                options.delivery(\.retries, .some(count))
            }
        },
        .value("--retry-max-time", valueName: "DURATION", help: "give up after failing this long without progress") { options, value throws(UsageError) in
            options.delivery(\.retryMaxTime, try parseDuration(value, option: "--retry-max-time"))
        },
        .value("--segment-bytes", valueName: "SIZE", help: "end each acknowledged segment after SIZE (default 8MiB)") { options, value throws(UsageError) in
            options.delivery(\.segmentBytes, try parseByteSize(value, option: "--segment-bytes"))
        },
        .value("--segment-seconds", valueName: "DURATION", help: "end each segment this long after its first byte (default 10s)") { options, value throws(UsageError) in
            options.delivery(\.segmentDuration, try parseDuration(value, option: "--segment-seconds"))
        },
        .value("--replay-buffer", valueName: "SIZE", help: "most unacknowledged bytes kept for resending (default 64MiB); stdin waits beyond it") { options, value throws(UsageError) in
            options.delivery(\.replayBytes, try parseByteSize(value, option: "--replay-buffer"))
        },
        .value("--retry-statuses", valueName: "LIST", help: "answers retried, e.g. 408,429,500-599 (the default); other 4xx/5xx are final") { options, value throws(UsageError) in
            options.delivery(\.retryStatuses, try parseStatusList(value))
        },
        .flag("--resumable", help: "append the stream to one IETF resumable upload (draft interop version 6): after a failure, ask the server how much it holds and go on from there, no byte sent twice") { options in
            options.delivery(\.resumable, true)
        },
        .value("--spool", valueName: "DIR", help: "keep unacknowledged bytes in DIR instead of memory; they survive a crash, and the next start sends them first") { options, value in
            options.delivery(\.spoolDirectory, value)
        },
        .value("--spool-size", valueName: "SIZE", help: "most unacknowledged bytes the spool holds (default 1GiB); stdin waits beyond it") { options, value throws(UsageError) in
            options.delivery(\.spoolBytes, try parseByteSize(value, option: "--spool-size"))
        },
        .value("--shutdown-timeout", valueName: "DURATION", help: "after SIGINT/SIGTERM, wait at most this long for the rest to be sent and answered (default 30s), then exit 2") { options, value throws(UsageError) in
            options.shutdownTimeout = try parseDuration(value, option: "--shutdown-timeout")
        },
        .value("-o", "--output", valueName: "FILE", help: "write a 2xx answer's body to FILE instead of stdout (- is stdout; without URL: the summary)") { options, value in
            options.outputFile = value == "-" ? nil : value
        },
        .flag("-v", "--verbose", help: "print the request, the response and progress on stderr") { $0.verbose = true },
        .flag("-h", "--help", help: "show this help") { _ in },
    ]

    /// Sets one delivery option, turning segmented delivery on.
    mutating func delivery<Value>(_ field: WritableKeyPath<DeliveryOptions, Value>, _ value: Value) {
        var options = delivery ?? DeliveryOptions()
        options[keyPath: field] = value
        delivery = options
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
        let shown = UploadConfiguration.Header.escaped(text)
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError("-H: '\(shown)' is not 'Name: value'")
        }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(" ") else { throw UsageError("-H: '\(shown)' has no valid header name") }
        let header = UploadConfiguration.Header(name: name, value: value)
        // The library's rule (UploadConfiguration+Headers.swift): framing fields, controls.
        if let problem = header.problem { throw UsageError("-H: '\(shown)': \(problem)") }
        return header
    }

    static let help = """
        usage: streamup [options] [URL]
               streamup tail [options] FILE [URL]
               streamup heartbeat [options] [URL] [-- COMMAND ...]
               streamup sink [options]
               streamup --help | --version

        Streams standard input to URL as one HTTP request with a chunked body, live: each line
        leaves as soon as it is read, for as long as stdin stays open. When stdin ends, the body
        ends and streamup waits for the server's answer.

            tail -F app.log | streamup https://logs.example/ingest

        Without URL, streamup starts a local sink on 127.0.0.1, streams stdin to it, and prints
        what the sink stored (bytes and SHA-256) on stdout: a dry run.

        options:
        \(helpLines(for: table))
        A full buffer stops reading stdin until the server takes more (memory stays flat).

        Delivery: by default the stream is one request, and a broken connection ends it (exit 2).
        With --retries (or any segment option) the stream is sent as consecutive requests of at
        most --segment-bytes / --segment-seconds, each acknowledged by a 2xx; a failed segment
        (connection error, 408, 429, 5xx; Retry-After honoured; backoff with jitter) is sent
        again from the last acknowledged byte, so nothing is lost. Each request carries
        Streamup-Stream-Id and Streamup-Offset so the receiver can drop duplicates
        (`streamup sink` does). Other 4xx answers are final.
        --resumable speaks the IETF resumable-upload protocol instead (any server that speaks
        it, e.g. `streamup sink` or Apple's NIOResumableUpload): one upload is created, each
        segment is a PATCH, and after a failure a HEAD tells where to go on: no duplicates.
        --spool DIR keeps the unacknowledged bytes on disk: a crash or kill loses none of them,
        and the next start with the same DIR sends them first (same stream id and offsets).
        SIGINT/SIGTERM: stop reading stdin, send what is buffered, end the body, wait for the
        answer (at most --shutdown-timeout). A second signal aborts at once (exit 130).

        exit status:
          0   the server answered 2xx; its body, if any, is printed on stdout (or -o FILE)
          1   the server answered another status (one line on stderr: the status and the
              start of the body, or a redirect's Location)
          2   no answer: refused or lost connection, timeout, cancelled
          64  usage error (also a bad URL, a closed stdin, an -o FILE that cannot be written)
          74  the result could not be written: stdout closed or its reader gone, -o FILE failing

        See `streamup tail --help` (file follower), `streamup heartbeat --help` (heartbeat
        monitor) and `streamup sink --help` (the local sink).
        """
}
