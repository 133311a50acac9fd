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
}

extension StreamUploader: UploadRunning {
    package var bytesProduced: Int { progress.bytesProduced }
    package var bytesDelivered: Int { progress.bytesSent }
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilSent(produced) }
}

extension ReliableUploader: UploadRunning {
    package var bytesProduced: Int { progress.produced }
    package var bytesDelivered: Int { max(0, progress.acknowledged - producerStart) }
    package func waitUntilDelivered(_ produced: Int) async { await waitUntilAcknowledged(producerStart + produced) }
}
