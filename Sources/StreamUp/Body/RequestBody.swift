import Foundation

/// The streamed body of one request, as the URLSession delegate hands it over: a stream per
/// request for the body (URLSession asks again when libcurl must re-send, DesignNotes, platform fact 2).
///
/// Thread safety: implementations are safe from any thread; URLSession asks on its delegate
/// queue, the uploader closes from its task.
protocol RequestBody: AnyObject, Sendable {
    /// The stream for URLSession's `attempt`th request for the body (1 for the first), or nil
    /// when the body cannot be sent again; the body has then failed, so the stream URLSession
    /// still holds reports an error instead of being read on (fact 2).
    func stream(forAttempt attempt: Int) -> InputStream?
    /// Body bytes handed to URLSession so far (of the latest stream).
    var bytesSent: Int { get }
    /// The failure that ended the body, if one did (it explains a failed request better than
    /// URLSession's error).
    var failure: StreamUpError? { get }
    /// The request is over: whatever still waits to read or write the body is woken.
    func close()
    /// Ends the body with `error` now, waking a read that waits (a cancel of the request runs
    /// on the thread that read holds, fact 3).
    func abort(_ error: StreamUpError)
}
