import Foundation
import StreamUpSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `URLSession` for all the requests of a reliable upload (segments and protocol
/// requests), so that they reuse a connection: a request costs about 0.7 ms on loopback this
/// way against 1.5 ms more with a session of its own, which is what lets 8 MiB segments keep
/// up with a single request (Benchmarks/RESULTS.md).
///
/// It is the production ``ExchangeTransport``: each exchange's request starts here and its
/// call is awaited (a resumable PATCH on a session of its own, ended with it).
///
/// swift-corelibs-foundation hands most of a task's callbacks to the session's delegate, not to
/// a per-task delegate; this session delegate passes each one on to the `UploadTaskDelegate`
/// of its task, which works exactly as with a session of its own.
///
/// Thread safety: the table and the set of servers that answered are guarded by a `Mutex` each;
/// callbacks arrive on the session's delegate queue; `session` is set once in `init`, before
/// any callback.
final class SegmentSession: NSObject, URLSessionDataDelegate, ExchangeTransport, @unchecked Sendable {
    private let delegates = Mutex<[Int: UploadTaskDelegate]>([:])
    /// The servers (`host:port`) that have answered a request of this session: a failure to
    /// answer later is not a wrong scheme or port.
    private let answered = Mutex<Set<String>>([])
    /// The server (`host:port`) of each URL this session sent to, worked out once per URL.
    private let servers = Mutex<[URL: String]>([:])
    private var session: URLSession!
    private let configuration: UploadConfiguration

    /// A session with the settings every upload uses for `configuration` (``UploadRequest``),
    /// with a connection for each of `requestsAtOnce` requests out at once. It holds this
    /// object until ``invalidate()``.
    init(_ configuration: UploadConfiguration, requestsAtOnce: Int = 1) {
        self.configuration = configuration
        super.init()
        session = UploadRequest.makeSession(configuration, connectionsPerHost: requestsAtOnce, delegate: self)
    }

    /// Sends `request` with `body` (a complete ``WindowBody``, read as a stream so that libcurl
    /// can re-send it, or as `Data` when it fits one libcurl read; the request carries its
    /// `Content-Length`), or a live stream (``LiveBody``, one chunked request, not `segmented`),
    /// or none, and returns the answer.
    /// - Throws: ``StreamUpError`` when no answer came (transport failure, cancellation, or the
    ///   body's own failure).
    func send(
        _ request: URLRequest, body: (any RequestBody)?, segmented: Bool = true, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) async throws -> UploadResponse {
        try await call(request, body: body, segmented: segmented, onEvent: onEvent).outcome().get()
    }

    /// Starts `request` (as ``send(_:body:segmented:onEvent:)`` says) on this session's
    /// connections, or on a session of its own that ends with it (`ownConnection`).
    private func call(
        _ request: URLRequest, body: (any RequestBody)?, segmented: Bool, ownConnection: Bool = false,
        onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> Call {
        if ownConnection {
            let own = SegmentSession(configuration)
            var call = own.call(request, body: body, segmented: segmented, onEvent: onEvent)
            call.session = own
            return call
        }
        let server = request.url.map(server(of:))
        let answeredBefore = server.map { server in answered.withLock { $0.contains(server) } } ?? false
        let delegate = UploadTaskDelegate(
            body: body, maxResponseBodyBytes: configuration.maxResponseBodyBytes, answerTimeout: configuration.responseTimeout, segmented: segmented,
            answeredBefore: answeredBefore, server: server, onEvent: onEvent)
        // A small segment goes as `Data`: waiting for its answer then costs no CPU on a reused
        // connection (DesignNotes, platform fact 9; WindowBody.oneReadData()).
        let window = body as? WindowBody
        let data = window?.oneReadData()
        let task: URLSessionTask =
            if let data { session.uploadTask(with: request, from: data) } else if body == nil { session.dataTask(with: request) } else {
                session.uploadTask(withStreamedRequest: request)
            }
        delegates.withLock { $0[task.taskIdentifier] = delegate }
        task.resume()
        return Call(delegate: delegate, task: TaskReference(task), body: body, sentAsData: data == nil ? nil : window)
    }

    /// One request of this session under way.
    ///
    /// Thread safety: a value type over thread-safe parts (the delegate's lock, the task's
    /// reference, the body's lock).
    private struct Call: ExchangeCall {
        let delegate: UploadTaskDelegate
        let task: TaskReference<URLSessionTask>
        let body: (any RequestBody)?
        /// The body handed over as `Data`, whose bytes sent only the task knows.
        let sentAsData: WindowBody?
        /// A session of the request's own, ended with it.
        var session: SegmentSession?

        func outcome() async -> Result<UploadResponse, StreamUpError> {
            defer {
                sentAsData?.noteSent(Int(task.value.countOfBytesSent))
                session?.invalidate()
            }
            return await withTaskCancellationHandler {
                await delegate.outcome()
            } onCancel: {
                body?.abort(StreamUpError(.cancelled, "the upload was cancelled"))
                task.cancelSoon()
            }
        }
    }

    func start(
        _ request: URLRequest, body: WindowBody?, ownConnection: Bool, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> any ExchangeCall {
        call(request, body: body, segmented: true, ownConnection: ownConnection, onEvent: onEvent)
    }

    /// Lets running tasks finish, then releases the session (and its hold on this object).
    func invalidate() {
        session.finishTasksAndInvalidate()
    }

    /// The server of `url` (``SessionURL/authority(of:)``), parsed once per URL: every segment
    /// of a stream goes to the same few.
    private func server(of url: URL) -> String {
        if let known = servers.withLock({ $0[url] }) { return known }
        let server = SessionURL.authority(of: url)
        servers.withLock { $0[url] = server }
        return server
    }

    private func delegate(for task: URLSessionTask) -> UploadTaskDelegate? {
        delegates.withLock { $0[task.taskIdentifier] }
    }

    // MARK: Forwarding, one method per callback UploadTaskDelegate answers

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping (InputStream?) -> Void) {
        guard let delegate = delegate(for: task) else { return completionHandler(nil) }
        delegate.urlSession(session, task: task, needNewBodyStream: completionHandler)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        guard let delegate = delegate(for: task) else { return completionHandler(nil) }
        delegate.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request, completionHandler: completionHandler)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let delegate = delegate(for: task) else { return completionHandler(.cancelAuthenticationChallenge, nil) }
        delegate.urlSession(session, task: task, didReceive: challenge, completionHandler: completionHandler)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let delegate = delegate(for: dataTask) else { return completionHandler(.cancel) }
        if response is HTTPURLResponse, let server = delegate.server {
            answered.withLock { _ = $0.insert(server) }
        }
        delegate.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        delegate(for: dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let delegate = delegates.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        delegate?.urlSession(session, task: task, didCompleteWithError: error)
    }
}
