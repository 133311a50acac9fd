import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One `URLSession` for many consecutive requests (a reliable upload's segments and protocol
/// requests), so that they can reuse a connection instead of opening one each.
///
/// swift-corelibs-foundation hands most of a task's callbacks to the session's delegate, not to
/// a per-task delegate; this session delegate passes each one on to the ``UploadTaskDelegate``
/// registered for its task, which works exactly as with a session of its own.
///
/// Thread safety: the table is guarded by a `Mutex`; callbacks arrive on the session's
/// delegate queue; `session` is set once in `init`.
final class SharedSession: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let delegates = Mutex<[Int: UploadTaskDelegate]>([:])
    private(set) var session: URLSession!

    /// A session with the settings ``StreamUploader`` uses for `configuration`. The session
    /// holds this object until ``invalidate()``.
    init(_ configuration: UploadConfiguration) {
        super.init()
        session = StreamUploader.makeSession(configuration, delegate: self)
    }

    /// Routes `task`'s callbacks to `delegate` until it completes. Call before `resume()`.
    func register(_ delegate: UploadTaskDelegate, for task: URLSessionTask) {
        delegates.withLock { $0[task.taskIdentifier] = delegate }
    }

    /// Lets running tasks finish, then releases the session (and its hold on this object).
    func invalidate() {
        session.finishTasksAndInvalidate()
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
