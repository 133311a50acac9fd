internal import CStreamUpCurl
import Foundation
import StreamUpSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Finds out why an `https` server dropped a connection, when libcurl could not say: a TLS 1.3 server that refuses the client's certificate (or wants one) sends
/// its alert while the request is being written, and the connection's reset often loses it
/// ("Send failure: Connection reset by peer", "Recv failure: …"). A second connection that
/// sends nothing reads the alert every time (`TLSProbe.c`): its words then replace libcurl's,
/// so the line names the certificate problem and the option that fixes it. A server that ends
/// the handshake itself (a reset, a close) is said as that ("OpenSSL SSL_connect: …").
///
/// At most one probe per endpoint and client certificate every ``interval``: a server that
/// drops every request is not asked again at each quick retry. A probe takes at most ``wait``,
/// on the caller's thread (the session's delegate queue, after the request has failed).
///
/// Thread safety: `recent` is guarded by its `Mutex`; the probe itself has its own handle.
enum TLSProbe {
    static let wait: Duration = .milliseconds(1500)
    static let interval: Duration = .seconds(5)

    /// The last probe of each endpoint with each client certificate file: when, and the alert it
    /// read (nil: none).
    private static let recent = Mutex<[String: (at: ContinuousClock.Instant, alert: String?)]>([:])

    /// Foundation's codes for a connection the server dropped (its own text, not libcurl's).
    private static let droppedCodes: Set<Int> = [URLError.Code.networkConnectionLost.rawValue, URLError.Code.badServerResponse.rawValue]
    /// libcurl's texts for a connection the server dropped: the ones a lost alert leaves.
    private static let droppedPrefixes = ["Send failure", "Recv failure", "Empty reply", "OpenSSL SSL_read", "OpenSSL SSL_write", "SSL_read", "SSL_write"]

    /// The TLS alert or handshake failure behind a failure with libcurl's `text` sending to
    /// `url`, when a probe finds one; nil when the failure says enough already or it is not a
    /// dropped `https` connection to a server that never answered (or whose client certificate
    /// may have been renewed since it did).
    static func alert(for url: URL?, code: Int, text: String, answeredBefore: Bool) -> String? {
        guard let url, url.scheme?.lowercased() == "https", !text.contains("alert"),
            droppedCodes.contains(code) || droppedPrefixes.contains(where: text.hasPrefix), let origin = TLSEndpoints.origin(of: url),
            // A server that answered before drops connections for other reasons too; unless the
            // client certificate it took may have changed on disk since.
            !answeredBefore || TLSEndpoints.files(for: url)?.clientCertificate != nil
        else { return nil }
        let key = "\(origin) \(TLSEndpoints.files(for: url)?.clientCertificate?.path ?? "")"
        let now = ContinuousClock.now
        if let last = recent.withLock({ $0[key] }), now - last.at < interval { return last.alert }
        var detail = [CChar](repeating: 0, count: 512)
        let spelled = (SessionURL.forURLSession(url) ?? url).absoluteString
        let outcome = streamup_tls_probe(
            spelled, Int32(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000), &detail, detail.count)
        let words = String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // An alert, or a handshake the server ended without one (a reset, a close).
        let alert = (outcome == 1 && words.contains("alert")) || outcome == 2 ? words : nil
        recent.withLock { $0[key] = (now, alert) }
        return alert
    }
}
