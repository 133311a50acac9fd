import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How an exchange's request reaches the server and its answer comes back: the one seam
/// between delivery and the network. In production it is ``SegmentSession`` (URLSession,
/// through ``UploadTaskDelegate``); tests hand the uploader a scripted one that answers as a
/// test says, on a manual clock, with no socket (as async-http-client's request executor is
/// mocked, or swift-nio's embedded channel runs a pipeline without one).
///
/// Thread safety: implementations are safe from any thread (the delivery task starts calls,
/// the calls' own tasks await them).
protocol ExchangeTransport: Sendable {
    /// Starts `request` with `body` (a complete body whose length the request names, or none)
    /// now, before this returns; the returned call says how it ended. `ownConnection`: the
    /// request must not reuse a connection (a resumable PATCH, which libcurl would re-send by
    /// itself on a reused one that broke). `onEvent` hears the answer's head and refused
    /// redirects.
    func start(
        _ request: URLRequest, body: WindowBody?, ownConnection: Bool, onEvent: @escaping @Sendable (UploadEvent) -> Void
    ) -> any ExchangeCall

    /// Lets the calls still out finish, then releases what the transport holds.
    func invalidate()
}

/// One request under way on an ``ExchangeTransport``.
///
/// Thread safety: implementations are safe from any thread; ``outcome()`` is awaited once.
protocol ExchangeCall: Sendable {
    /// Waits for the answer (or why none came). Cancelling the waiting task cancels the request,
    /// and the outcome is then its failure.
    func outcome() async -> Result<UploadResponse, StreamUpError>
}
