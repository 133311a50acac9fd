import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The platform's bounds (DesignNotes, platform fact 7): one chunked `PUT` through
/// `URLSession.uploadTask(withStreamedRequest:)`, with nothing else in the process doing work.
/// The bench runs it as a child, so the child's `rusage` is the cost of URLSession and its body:
///
/// - `streamup-bench --bare-upload URL BYTES` uploads BYTES from memory (``MemoryBodyStream``):
///   no input to read at all, URLSession alone;
/// - `streamup-bench --bare-pipe-upload URL` uploads its stdin until it ends
///   (``PipeBodyStream``, one blocking `read(2)` per body read): the same pipe every other
///   client reads, and nothing more;
/// - `streamup-bench --bare-segments-upload URL BYTES SEGMENT` uploads BYTES from memory as
///   requests of SEGMENT bytes one after another, each with its `Content-Length` (as streamup
///   sends its segments), the next once the last was answered: the platform's bound for a stream
///   sent as requests one at a time (each pays URLSession's fixed cost of a request);
/// - `streamup-bench --bare-pipe-segments-upload URL BYTES SEGMENT` does the same with BYTES read
///   from its stdin, SEGMENT bytes per request: the bound for what streamup's default delivery
///   does (the same pipe, the same requests), with nothing but URLSession between them.
///
/// The session is set up as streamup sets up its own: an ephemeral configuration, a serial
/// delegate queue, and an empty `Expect` so libcurl does not wait for `100 Continue`.
/// Exit status: 0 after a 200, 1 otherwise (one line on stderr), 64 on a usage error.
///
/// Thread safety: runs on the main thread; the delegate's callbacks run on its own queue.
enum BareUploader {
    /// Where the body comes from.
    ///
    /// Thread safety: a value type.
    enum Body: Sendable {
        case memory(bytes: Int)
        case standardInput
        /// The next `bytes` bytes of stdin.
        case standardInputPart(bytes: Int)

        /// A new stream of the body (URLSession asks once per request).
        func makeStream() -> InputStream {
            switch self {
            case .memory(let bytes): MemoryBodyStream(total: bytes)
            case .standardInput: PipeBodyStream(descriptor: STDIN_FILENO)
            case .standardInputPart(let bytes): PipeBodyStream(descriptor: STDIN_FILENO, limit: bytes)
            }
        }
    }

    /// One request of the upload: its body, and its `Content-Length` when it has one (else it
    /// goes chunked).
    ///
    /// Thread safety: a value type.
    struct Request: Sendable {
        let body: Body
        let contentLength: Int?

        /// `bytes` (from memory, or from stdin when `fromStandardInput`) as requests of
        /// `segment` bytes each (the last one may be shorter), each with its length.
        static func segments(of bytes: Int, each segment: Int, fromStandardInput: Bool) -> [Request] {
            stride(from: 0, to: bytes, by: segment).map { start in
                let count = min(segment, bytes - start)
                let body: Body = fromStandardInput ? .standardInputPart(bytes: count) : .memory(bytes: count)
                return Request(body: body, contentLength: count)
            }
        }
    }

    static let flag = "--bare-upload"
    static let pipeFlag = "--bare-pipe-upload"
    static let segmentsFlag = "--bare-segments-upload"
    static let pipeSegmentsFlag = "--bare-pipe-segments-upload"
    static let flags = [flag, pipeFlag, segmentsFlag, pipeSegmentsFlag]

    /// Runs the upload that `mode` (one of ``flags``) names; returns the exit status.
    static func run(_ mode: String, _ arguments: [String]) -> Int32 {
        guard let (url, requests) = parse(mode, arguments) else {
            let usage =
                switch mode {
                case pipeFlag: "\(pipeFlag) URL"
                case segmentsFlag, pipeSegmentsFlag: "\(mode) URL BYTES SEGMENT"
                default: "\(flag) URL BYTES"
                }
            Progress.error("usage: streamup-bench \(usage)")
            return 64
        }
        return upload(requests, to: url)
    }

    /// The URL and requests of `mode`'s arguments, or nil when they do not fit it.
    private static func parse(_ mode: String, _ arguments: [String]) -> (URL, [Request])? {
        guard let url = arguments.first.flatMap(URL.init(string:)) else { return nil }
        switch mode {
        case flag where arguments.count == 2:
            guard let bytes = Int(arguments[1]), bytes >= 0 else { return nil }
            return (url, [Request(body: .memory(bytes: bytes), contentLength: nil)])
        case pipeFlag where arguments.count == 1:
            return (url, [Request(body: .standardInput, contentLength: nil)])
        case segmentsFlag where arguments.count == 3, pipeSegmentsFlag where arguments.count == 3:
            guard let bytes = Int(arguments[1]), bytes >= 0, let segment = Int(arguments[2]), segment > 0 else { return nil }
            return (url, Request.segments(of: bytes, each: segment, fromStandardInput: mode == pipeSegmentsFlag))
        default:
            return nil
        }
    }

    /// Sends `requests` one after another, each once the one before was answered.
    private static func upload(_ requests: [Request], to url: URL) -> Int32 {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let delegate = BareUploadDelegate()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        for planned in requests {
            var request = URLRequest(url: url)
            request.httpMethod = "PUT"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            request.setValue("", forHTTPHeaderField: "Expect")
            if let length = planned.contentLength {
                // As streamup frames a segment: its length, and no chunked encoding.
                request.setValue(String(length), forHTTPHeaderField: "Content-Length")
                request.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
            }
            delegate.expect(planned.body)
            session.uploadTask(withStreamedRequest: request).resume()
            let (status, error) = delegate.wait()
            guard status == 200, error == nil else {
                Progress.error("bare upload: status \(status)\(error.map { ", \($0)" } ?? "")")
                return 1
            }
        }
        return 0
    }
}
