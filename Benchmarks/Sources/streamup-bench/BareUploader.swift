import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The platform's bound (DesignNotes, platform fact 7): `streamup-bench --bare-upload URL BYTES` uploads
/// BYTES from an in-memory ``MemoryBodyStream`` as one chunked `PUT` through
/// `URLSession.uploadTask(withStreamedRequest:)`, with nothing else in the process doing work:
/// no pipe, no ring, no producer thread. The bench runs this mode as a child, so the child's
/// `rusage` is the cost of URLSession alone.
///
/// The session is set up as streamup sets up its own: an ephemeral configuration, a serial
/// delegate queue, and an empty `Expect` so libcurl does not wait for `100 Continue`.
/// Exit status: 0 after a 200, 1 otherwise (one line on stderr).
///
/// Thread safety: runs on the main thread; the delegate's callbacks run on its own queue.
enum BareUploader {
    static let flag = "--bare-upload"

    /// Runs the upload; returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let url = URL(string: arguments[0]), let bytes = Int(arguments[1]), bytes >= 0 else {
            Progress.error("usage: streamup-bench \(flag) URL BYTES")
            return 64
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let delegate = BareUploadDelegate(bytes: bytes)
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
