import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bare uploaders' URLSession delegate, for one request at a time: hands over one stream of
/// the body it expects (``expect(_:)``), drains the answer, and signals completion with the final
/// status.
///
/// A second request for a body stream (URLSession re-sending, DesignNotes, platform fact 2) cancels the
/// task: the bound this uploader measures sends each byte once, so such a run must fail, not resend.
///
/// Thread safety: callbacks arrive on the session's serial delegate queue; `state` is guarded
/// by its `Mutex` (every mutable field), and the outcome is read after `done` was signalled.
final class BareUploadDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct State {
        var body: BareUploader.Body?
        var bodyRequests = 0
        var status = 0
        var error: String?
    }

    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    /// Readies the delegate for the next task, whose body is `body`.
    func expect(_ body: BareUploader.Body) {
        state.withLock { $0 = State(body: body) }
    }

    /// Waits for the task to complete; returns the final status (0 without one) and the error.
    func wait() -> (status: Int, error: String?) {
        done.wait()
        return state.withLock { ($0.status, $0.error) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping (InputStream?) -> Void
    ) {
        let body = state.withLock { state in
            state.bodyRequests += 1
            return state.bodyRequests == 1 ? state.body : nil
        }
        if let body {
            completionHandler(body.makeStream())
        } else {
            state.withLock { $0.error = "URLSession asked for the body again (a re-send); the bare uploader does not resend" }
            task.cancel()
            completionHandler(nil)
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse, http.statusCode >= 200 {
            state.withLock { $0.status = http.statusCode }
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {}

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        state.withLock { state in
            if let error, state.error == nil { state.error = "\(error.localizedDescription)" }
            if state.status == 0, let http = task.response as? HTTPURLResponse { state.status = http.statusCode }
        }
        done.signal()
    }
}
