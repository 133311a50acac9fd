/// What code that drives an upload (``TelemetryEmitter``, the command-line tool) needs of
/// either uploader: one request (``StreamUploader``) or acknowledged segments
/// (``ReliableUploader``).
///
/// Thread safety: both uploaders are callable from any thread.
package protocol UploadRunning: Sendable {
    /// Runs the upload with `producer` as its source; returns the server's (last) answer.
    func run(_ producer: some Producer) async throws -> UploadResponse
    /// Ends the body after what the producer has written.
    func finish()
    /// Aborts the upload.
    func cancel()
    /// Bytes the producer has written in this run.
    var bytesProduced: Int { get }
    /// Bytes of this run handed to the connection (one request) or acknowledged (segments).
    var bytesDelivered: Int { get }
    /// Suspends until `produced` bytes of this run are delivered, or the upload can deliver no more.
    func waitUntilDelivered(_ produced: Int) async
    /// The writer into the upload's buffer; it takes bytes before ``run(_:)`` starts.
    var bufferWriter: StreamWriter { get }
    /// Bytes an earlier run left to send first (a spool's); 0 for one request.
    var recoveredBytes: Int { get }
    /// Ends a retry's backoff now (segments); nothing for one request, which is not retried.
    func retryNow()
}

extension StreamUploader: UploadRunning {
    package var bytesProduced: Int { progress.bytesProduced }
    package var bytesDelivered: Int { progress.bytesSent }
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilSent(produced) }
    package var bufferWriter: StreamWriter { writer }
    package var recoveredBytes: Int { 0 }
    package func retryNow() {}
}

extension ReliableUploader: UploadRunning {
    package var bytesProduced: Int { progress.produced }
    package var bytesDelivered: Int { max(0, progress.acknowledged - producerStart) }
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilAcknowledged(producerStart + produced) }
    package var bufferWriter: StreamWriter { writer }
}
