import Foundation

/// The uploaders compared on a stream from a pipe, and how each is invoked. All send one
/// stream as chunked `PUT`s (`curl -T -` always uses PUT, so streamup gets `-X PUT`): the
/// same work on the wire.
///
/// - ``segments``: streamup's default delivery, acknowledged segments (`--records none`: the
///   bytes are treated as opaque, as for random input).
/// - ``single``: `streamup --single-request`, one never-ending request.
/// - ``curl``: `curl -sS -T -`.
/// - ``bare``: the platform's bound (DesignNotes, platform fact 7): this bench run as a child in its
///   `--bare-upload` mode, a bare `URLSession.uploadTask(withStreamedRequest:)` reading an
///   in-memory `InputStream` (no pipe, no ring; see ``BareUploader``).
/// - ``barePipe``: the platform's bound for a pipe: the same child in its `--bare-pipe-upload`
///   mode, whose `InputStream` is one blocking `read(2)` of its stdin per read (the same pipe
///   the others read; no ring, no other thread).
/// - ``bareSegments``: the platform's bound for a stream sent as requests one at a time: the
///   same child in its `--bare-segments-upload` mode, sending the bytes from memory as requests
///   of ``segmentBytes`` (streamup's default segment), each once the last was answered.
/// - ``barePipeSegments``: the bound for streamup's default delivery itself: the same child in
///   its `--bare-pipe-segments-upload` mode, sending the same pipe as requests of
///   ``segmentBytes``, each once the last was answered (the pipe and the requests, nothing else).
///
/// Thread safety: a value type.
enum Client: String, Sendable, CaseIterable {
    case segments
    case single
    case curl
    case bare
    case barePipe
    case bareSegments
    case barePipeSegments

    /// The size of streamup's default segment (half its default 8 MiB buffer), which the bare
    /// segments uploader sends as its requests; the report shows both request counts.
    static let segmentBytes = 4 << 20

    /// The clients of the latency runs.
    static let latencyClients: [Client] = [.segments, .single, .curl]

    /// The column heading of the client in the report.
    var title: String {
        switch self {
        case .segments: "streamup (default: segments)"
        case .single: "streamup --single-request"
        case .curl: "curl -T -"
        case .bare: "bare URLSession (memory)"
        case .barePipe: "bare URLSession (pipe)"
        case .bareSegments: "bare URLSession (memory, 4 MiB requests)"
        case .barePipeSegments: "bare URLSession (pipe, 4 MiB requests)"
        }
    }

    /// Whether the client reads the stream from its stdin (all but the memory bare uploaders,
    /// which make it).
    var readsStdin: Bool { self != .bare && self != .bareSegments }

    /// The arguments (without argv[0]) that send `bytes` bytes to `url` (only ``bare`` is
    /// told the count; the others read until their stdin ends).
    func arguments(url: String, bytes: String) -> [String] {
        switch self {
        case .segments: ["-X", "PUT", "--records", "none", url]
        case .single: ["-X", "PUT", "--single-request", url]
        case .curl: ["-sS", "-T", "-", url]
        case .bare: [BareUploader.flag, url, bytes]
        case .barePipe: [BareUploader.pipeFlag, url]
        case .bareSegments: [BareUploader.segmentsFlag, url, bytes, String(Self.segmentBytes)]
        case .barePipeSegments: [BareUploader.pipeSegmentsFlag, url, bytes, String(Self.segmentBytes)]
        }
    }

    /// The arguments of a latency run: as ``arguments(url:bytes:)``, but streamup's default
    /// segments keep the default `--records lines` (the input is lines; a request ends only
    /// after a whole line).
    func latencyArguments(url: String) -> [String] {
        switch self {
        case .segments: ["-X", "PUT", url]
        case .single, .curl, .bare, .barePipe, .bareSegments, .barePipeSegments: arguments(url: url, bytes: "")
        }
    }

    /// The command of a latency run as the report shows it.
    var latencyDisplayCommand: String {
        displayCommand(latencyArguments(url: "http://127.0.0.1:PORT/"))
    }

    /// The command as the report shows it.
    var displayCommand: String {
        displayCommand(arguments(url: "http://127.0.0.1:PORT/", bytes: "BYTES"))
    }

    private func displayCommand(_ arguments: [String]) -> String {
        let program =
            switch self {
            case .segments, .single: "streamup"
            case .curl: "curl"
            case .bare, .barePipe, .bareSegments, .barePipeSegments: "streamup-bench"
            }
        return ([program] + arguments).joined(separator: " ")
    }

    /// `clients` in the order round `round` (from 0) runs them: as given in even rounds,
    /// reversed in odd ones, so slow drift of the machine favours no one.
    static func order<Item>(_ clients: [Item], forRound round: Int) -> [Item] {
        round % 2 == 0 ? clients : clients.reversed()
    }
}
