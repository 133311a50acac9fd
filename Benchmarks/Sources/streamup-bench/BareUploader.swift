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
///   client reads, and nothing more.
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

        /// A new stream of the body (URLSession asks once per request).
        func makeStream() -> InputStream {
            switch self {
            case .memory(let bytes): MemoryBodyStream(total: bytes)
            case .standardInput: PipeBodyStream(descriptor: STDIN_FILENO)
            }
        }
    }

    static let flag = "--bare-upload"
    static let pipeFlag = "--bare-pipe-upload"

    /// Runs the upload that `mode` (``flag`` or ``pipeFlag``) names; returns the exit status.
    static func run(_ mode: String, _ arguments: [String]) -> Int32 {
        guard let (url, body) = parse(mode, arguments) else {
            Progress.error(mode == pipeFlag ? "usage: streamup-bench \(pipeFlag) URL" : "usage: streamup-bench \(flag) URL BYTES")
            return 64
        }
        return upload(body, to: url)
    }

    /// The URL and body of `mode`'s arguments, or nil when they do not fit it.
    private static func parse(_ mode: String, _ arguments: [String]) -> (URL, Body)? {
        guard let url = arguments.first.flatMap(URL.init(string:)) else { return nil }
        switch mode {
        case flag where arguments.count == 2:
            guard let bytes = Int(arguments[1]), bytes >= 0 else { return nil }
            return (url, .memory(bytes: bytes))
        case pipeFlag where arguments.count == 1:
            return (url, .standardInput)
        default:
            return nil
        }
    }

    private static func upload(_ body: Body, to url: URL) -> Int32 {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let delegate = BareUploadDelegate(body: body)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        request.setValue("", forHTTPHeaderField: "Expect")
        session.uploadTask(withStreamedRequest: request).resume()
        let (status, error) = delegate.wait()
        session.finishTasksAndInvalidate()
        guard status == 200, error == nil else {
            Progress.error("bare upload: status \(status)\(error.map { ", \($0)" } ?? "")")
            return 1
        }
        return 0
    }
}
