import Foundation
import StreamUpSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a failed URLSession task into one line that says what happened and what to do.
///
/// On Linux the `URLError` code alone says little: corelibs Foundation maps only a few libcurl
/// results to codes of their own and reports the rest as `.unknown` (-1), carrying libcurl's
/// error text as the description (`MultiHandle.swift`, `urlErrorCode(for:)`): "Send failure:
/// Broken pipe" (a server or proxy closed the connection mid-body), "SSL certificate problem:
/// …", "Could not resolve proxy: …". So each row of ``rules`` recognises a failure by its code,
/// by the start of that text, or both, and says it in words; the first row that matches wins,
/// and a failure no row knows still gets one line, with the raw text and code.
///
/// Thread safety: stateless; the rule table is immutable. Callable from any thread.
enum TransportFailure {
    /// One kind of failure: how to recognise it and what to say.
    ///
    /// Thread safety: immutable; the sentence closure is pure.
    struct Rule: Sendable {
        /// `URLError` codes (raw values) this row takes; empty: any code.
        let codes: Set<Int>
        /// libcurl texts this row takes, by their start; empty: any text.
        let prefixes: [String]
        /// libcurl texts this row takes, by a part anywhere in them (OpenSSL's alerts come after
        /// "OpenSSL SSL_read:" and its version); empty: any text.
        var fragments: [String] = []
        /// Whether the row needs a client certificate given (`--cert`), or none given.
        var clientCertificate: Bool? = nil
        /// The line, given where the request went and the failure.
        let sentence: @Sendable (_ failure: Facts) -> String

        init(
            codes: Set<Int>, prefixes: [String], fragments: [String] = [], clientCertificate: Bool? = nil,
            sentence: @escaping @Sendable (_ failure: Facts) -> String
        ) {
            self.codes = codes
            self.prefixes = prefixes
            self.fragments = fragments
            self.clientCertificate = clientCertificate
            self.sentence = sentence
        }

        func matches(code: Int, text: String, tls: UploadConfiguration.TLS? = nil) -> Bool {
            (codes.isEmpty || codes.contains(code)) && (prefixes.isEmpty || prefixes.contains { text.hasPrefix($0) })
                && (fragments.isEmpty || fragments.contains { text.contains($0) })
                && (clientCertificate.map { $0 == (tls?.clientCertificate != nil) } ?? true)
        }
    }

    /// What is known about one failure, for a sentence.
    ///
    /// Thread safety: a value type.
    struct Facts: Sendable {
        /// Where the request went: `[::1]:8080`, `logs.example`.
        let target: String
        /// libcurl's (or Foundation's) text, when there is one worth showing.
        let detail: String?
        /// The `URLError` code.
        let code: Int
        /// The address libcurl says it could not connect to, when that is not the target (a
        /// proxy): `127.0.0.1:3128`.
        let proxy: String?
        /// The request was one segment of an acknowledged stream (retried, already short).
        var segmented = false
        /// The server at `target` answered an earlier request of this upload: the port speaks
        /// HTTP, so a wrong scheme is not the cause.
        var answeredBefore = false
        /// The TLS files the endpoint has (``TLSEndpoints``), if any.
        var tls: UploadConfiguration.TLS?
        /// Why files that changed on disk were not used, if they were not.
        var rotationProblem: String?

        /// OpenSSL's reason in the detail, without its version and code: "tlsv13 alert
        /// certificate required" from "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL
        /// routines::tlsv13 alert certificate required, errno 0".
        var alert: String {
            guard let detail else { return "no details" }
            var reason = detail.range(of: "::", options: .backwards).map { String(detail[$0.upperBound...]) } ?? detail
            if let errno = reason.range(of: ", errno") { reason = String(reason[..<errno.lowerBound]) }
            return reason.trimmingCharacters(in: .whitespaces)
        }

        /// `; files changed on disk were not used: …`, or nothing.
        var rotationNote: String {
            rotationProblem.map { "; files changed on disk were not used: \($0)" } ?? ""
        }

        /// The line for a server certificate whose issuer is not trusted.
        func untrusted(because reason: String?) -> String {
            let why = reason.map { " (\($0))" } ?? ""
            let given = [tls?.caCertificates.map { "--cacert \($0.path)" }, tls?.caDirectory.map { "--capath \($0.path)" }].compactMap { $0 }
            guard !given.isEmpty else {
                return "the TLS certificate of \(target) is not issued by a CA this system trusts\(why): \(TransportFailure.trustStoreRemedy)"
            }
            return
                "the TLS certificate of \(target) is not issued by a CA in \(given.joined(separator: " or "))\(why): give the CA that issued it (the server may also need to send its intermediate certificates)\(rotationNote)"
        }

        /// `detail` after `prefix`, or the whole detail: "self-signed certificate".
        func detail(after prefix: String) -> String {
            guard let detail else { return "no details" }
            return detail.hasPrefix(prefix) ? String(detail.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces) : detail
        }
    }

    private static let refused = URLError.Code.cannotConnectToHost.rawValue
    private static let lost = URLError.Code.networkConnectionLost.rawValue
    private static let unknown = URLError.Code.unknown.rawValue
    private static let timedOut = URLError.Code.timedOut.rawValue

    /// Failures that come of a socket that could not be made, among others: told apart by the
    /// process's descriptors (``DescriptorLimit/isExhausted(margin:)``).
    private static let outOfDescriptorsCodes: Set<Int> = [refused, URLError.Code.cannotFindHost.rawValue, URLError.Code.dnsLookupFailed.rawValue]
    private static let connectPrefixes = ["Failed to connect", "Couldn't connect", "Could not resolve", "Couldn't resolve"]

    private static let certificateProblem = "SSL certificate problem:"
    /// OpenSSL's words (after libcurl's "SSL certificate problem:") for a chain that does not end
    /// at a trusted CA.
    private static let untrustedIssuer = [
        "self-signed certificate", "self signed certificate", "unable to get local issuer certificate",
        "unable to get issuer certificate", "unable to verify the first certificate",
    ]
    fileprivate static let trustStoreRemedy =
        "give that CA's certificate with --cacert FILE (PEM), or add it to the system's store (Debian: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates)"
    /// OpenSSL's alerts (after its version and error code) from a server that refused the client
    /// certificate it was sent, or one that ended the handshake for want of one.
    private static let refusedClientCertificate = [
        "alert unknown ca", "alert bad certificate", "alert certificate expired", "alert certificate revoked", "alert certificate unknown",
        "alert unsupported certificate", "alert access denied", "alert decrypt error",
    ]
    private static let missingClientCertificate = "alert certificate required"
    /// libcurl's words when the client certificate, its key or the CA certificates it was given
    /// cannot be used (a file changed on disk into something that is not PEM).
    private static let unusableFiles = [
        "could not load PEM client certificate", "could not load ASN1 client certificate", "unable to set private key file",
        "unable to use client certificate", "Private key does not match", "error importing CA certificate blob",
        "error setting certificate", "unable to set client certificate",
    ]

    /// Whether a failure with `code` and libcurl's `text` is a certificate the client refused:
    /// trying again cannot help. On Linux such failures come as code -1 with libcurl's text.
    static func isCertificateFailure(code: Int, text: String) -> Bool {
        let codes: [URLError.Code] = [
            .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
            .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired,
        ]
        return codes.contains { $0.rawValue == code }
            || [certificateProblem, "SSL peer certificate", "SSL: no alternative certificate subject name", "SSL: certificate subject name"]
                .contains { text.hasPrefix($0) }
            // The server wants a client certificate and got none. (It refusing the one it was
            // sent is retried: a renewed file is used at the next connection.)
            || text.contains(missingClientCertificate)
    }

    /// The table, first match wins. Darwin's own codes (TLS, no network) are here too.
    static let rules: [Rule] = [
        Rule(codes: [refused], prefixes: []) { facts in
            if let proxy = facts.proxy {
                return "connection refused by the proxy \(proxy) on the way to \(facts.target): check http_proxy, https_proxy and no_proxy"
            }
            return "connection refused by \(facts.target): nothing is listening there; check the host and port, and that the server runs"
        },
        Rule(codes: [], prefixes: ["Could not resolve proxy"]) { facts in
            "cannot resolve the proxy \(facts.detail(after: "Could not resolve proxy:")) on the way to \(facts.target): check http_proxy, https_proxy and no_proxy"
        },
        Rule(codes: [], prefixes: ["CONNECT tunnel failed", "Received HTTP code", "Proxy CONNECT aborted"]) { facts in
            "the proxy would not open a tunnel to \(facts.target) (\(facts.detail ?? "no details")): check http_proxy, https_proxy and no_proxy, and the proxy's credentials"
        },
        Rule(codes: [URLError.Code.cannotFindHost.rawValue, URLError.Code.dnsLookupFailed.rawValue], prefixes: []) { facts in
            "cannot resolve host \(facts.target): check its spelling and this machine's DNS settings"
        },
        Rule(codes: [timedOut], prefixes: ["Failed to connect"]) { facts in
            "connecting to \(facts.target) timed out: check that the address is right and reachable (a firewall may drop the packets)"
        },
        Rule(codes: [timedOut], prefixes: []) { facts in
            "\(facts.target) did not answer within the response timeout: check that the server is up and not overloaded, or raise the timeout"
        },
        Rule(codes: [unknown, lost], prefixes: ["Send failure"]) { facts in
            let head = "\(facts.target) closed the connection while the body was being sent, without answering (\(facts.detail(after: "Send failure:")))"
            // A segment is short already: the usual causes are a restart or a size limit.
            return facts.segmented
                ? "\(head): the server or a proxy in front of it restarted or dropped the request (a limit on request bodies, an idle timeout); check its logs"
                : "\(head): often a server's or proxy's limit on long or idle request bodies; send shorter requests (segmented delivery) or raise that limit"
        },
        Rule(codes: [lost], prefixes: []) { facts in
            "the connection to \(facts.target) was reset before an answer came: the server or a proxy in front of it dropped the request (crashed, restarted or refused it); check its logs"
        },
        Rule(codes: [URLError.Code.badServerResponse.rawValue], prefixes: ["Empty reply"]) { facts in
            // A server that answered before speaks HTTP on that port: the scheme is not the cause.
            facts.answeredBefore
                ? "\(facts.target) closed the connection without answering, though it answered earlier requests: the server or a proxy in front of it dropped this one (a limit on request bodies or memory, a restart); check its logs"
                : "\(facts.target) closed the connection without answering: the server or a proxy in front of it dropped the request; check its logs, and that the port speaks plain HTTP (https:// if it expects TLS)"
        },
        Rule(codes: [], prefixes: ["Received HTTP/0.9", "Weird server reply", "Unsupported HTTP version"]) { facts in
            "\(facts.target) answered something that is not HTTP: check the port, and use https:// if it expects TLS"
        },
        Rule(codes: [URLError.Code.badServerResponse.rawValue, URLError.Code.cannotParseResponse.rawValue], prefixes: []) { facts in
            "\(facts.target) sent an answer that is not valid HTTP (\(facts.detail ?? "no details")): check the port, and any proxy in between"
        },
        // Client certificates: the server wants one (final: nothing streamup has can change
        // it), refused the one it was sent (retried: a renewed file is used at the next
        // connection), or libcurl could not use the files (retried: a file caught mid-rotation).
        Rule(codes: [], prefixes: [], fragments: [missingClientCertificate], clientCertificate: false) { facts in
            "\(facts.target) wants a client certificate (\(facts.alert)): give it with --cert FILE and its key with --key FILE (PEM)"
        },
        Rule(codes: [], prefixes: [], fragments: [missingClientCertificate] + refusedClientCertificate, clientCertificate: true) { facts in
            "\(facts.target) refused the client certificate in --cert \(facts.tls?.clientCertificate?.path ?? "?") (\(facts.alert)): check that a CA the server trusts issued it and that it is in date and not revoked; a renewed file is used from the next connection\(facts.rotationNote)"
        },
        // A TLS 1.2 server that wants a client certificate ends the handshake with a plain
        // "handshake failure", as one that shares no version or cipher does.
        Rule(codes: [], prefixes: [], fragments: ["alert handshake failure"], clientCertificate: false) { facts in
            "the TLS handshake with \(facts.target) failed (\(facts.alert)): the server may want a client certificate (--cert FILE and --key FILE), or share no TLS version or cipher with this system's OpenSSL"
        },
        Rule(codes: [], prefixes: unusableFiles) { facts in
            "the TLS files for \(facts.target) could not be used (\(facts.detail ?? "no details"))\(facts.rotationNote.isEmpty ? ": check that --cacert, --cert and --key hold PEM certificates and the certificate's own key" : facts.rotationNote)"
        },
        // Certificates: what is wrong decides the remedy; an untrusted issuer points at the
        // CA files given (--cacert, --capath), or at giving one.
        Rule(codes: [], prefixes: ["SSL: no alternative certificate subject name", "SSL: certificate subject name"]) { facts in
            "the TLS certificate of \(facts.target) is for another name (\(facts.detail(after: "SSL:"))): connect by a name the certificate holds, or have the server present one for this name"
        },
        Rule(codes: [URLError.Code.serverCertificateHasBadDate.rawValue], prefixes: []) { facts in
            "the TLS certificate of \(facts.target) has expired or is not valid yet: the server needs a current certificate (or this machine's clock is wrong)"
        },
        Rule(codes: [], prefixes: [certificateProblem + " certificate has expired", certificateProblem + " certificate is not yet valid"]) { facts in
            "the TLS certificate of \(facts.target) is out of date (\(facts.detail(after: certificateProblem))): the server needs a current certificate (or this machine's clock is wrong)"
        },
        Rule(codes: [URLError.Code.serverCertificateUntrusted.rawValue, URLError.Code.serverCertificateHasUnknownRoot.rawValue], prefixes: []) { facts in
            facts.untrusted(because: nil)
        },
        Rule(codes: [], prefixes: untrustedIssuer.map { certificateProblem + " " + $0 }) { facts in
            facts.untrusted(because: facts.detail(after: certificateProblem))
        },
        Rule(codes: [URLError.Code.serverCertificateNotYetValid.rawValue], prefixes: []) { facts in
            "the TLS certificate of \(facts.target) is not valid yet: check this machine's clock, or the server's certificate"
        },
        Rule(codes: [], prefixes: [certificateProblem, "SSL peer certificate"]) { facts in
            "the TLS certificate of \(facts.target) was refused (\(facts.detail(after: certificateProblem))): check the server's certificate; a private CA is given with --cacert FILE"
        },
        Rule(codes: [URLError.Code.secureConnectionFailed.rawValue], prefixes: []) { facts in
            "the TLS handshake with \(facts.target) failed: check that the port speaks TLS, or use http://"
        },
        Rule(codes: [unknown], prefixes: ["OpenSSL", "SSL", "TLS", "error:"]) { facts in
            "the TLS handshake with \(facts.target) failed (\(facts.detail ?? "no details")): check that the port speaks TLS (https://), or use http://"
        },
        Rule(codes: [URLError.Code.notConnectedToInternet.rawValue], prefixes: []) { facts in
            "no network route to \(facts.target): check the address, the network connection and any firewall"
        },
        Rule(codes: [unknown], prefixes: ["Failed to connect"]) { facts in
            "cannot connect to \(facts.proxy.map { "the proxy \($0) on the way to \(facts.target)" } ?? facts.target) (\(facts.detail(after: "Failed to connect to"))): check the address, the network and any firewall"
        },
        Rule(codes: [URLError.Code.badURL.rawValue], prefixes: []) { facts in
            "URLSession refused the URL for \(facts.target) (\(facts.detail ?? "no details")): check the URL"
        },
        Rule(codes: [URLError.Code.unsupportedURL.rawValue], prefixes: []) { facts in
            "URLSession cannot send to \(facts.target): only http:// and https:// URLs work"
        },
        Rule(codes: [], prefixes: []) { facts in
            "the connection to \(facts.target) failed: \(facts.detail ?? "no details") (URLError \(facts.code)); check the URL, the network and the server"
        },
    ]

    /// The error for a task that completed with `error` while sending to `url`.
    static func error(for error: Error, url: URL?, segmented: Bool = false, answeredBefore: Bool = false) -> StreamUpError {
        let target = url.map(SessionURL.authority(of:)) ?? "the server"
        guard let urlError = error as? URLError else {
            return StreamUpError(.transport, "the connection to \(target) failed: \(error.localizedDescription)")
        }
        if urlError.code == .cancelled {
            return StreamUpError(.cancelled, "the upload was cancelled", urlError: urlError)
        }
        // A TLS alert the connection's reset lost, read again on a connection of its own: the
        // error then carries it, so the line and the retry policy see it (TLSProbe).
        let tls = TLSEndpoints.files(for: url)
        let rotationProblem = tls == nil ? nil : TLSEndpoints.rotationProblem(for: url)
        if let alert = TLSProbe.alert(for: url, code: urlError.code.rawValue, text: urlError.localizedDescription, answeredBefore: answeredBefore) {
            // As libcurl reports TLS failures on Linux: code -1 with its words.
            let found = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: alert])
            return StreamUpError(
                .transport, line(code: found.code.rawValue, text: alert, url: url, segmented: segmented, tls: tls, rotationProblem: rotationProblem),
                urlError: found)
        }
        return StreamUpError(
            .transport,
            line(
                code: urlError.code.rawValue, text: urlError.localizedDescription, url: url, segmented: segmented, answeredBefore: answeredBefore, tls: tls,
                rotationProblem: rotationProblem),
            urlError: urlError)
    }

    /// The line for a failure with `code` and libcurl's `text`, sending to `url` (one segment
    /// of an acknowledged stream when `segmented`; `answeredBefore`: the server answered an
    /// earlier request of this upload; `tls`: the files its endpoint has, and `rotationProblem`:
    /// why files changed on disk were not used, as ``TLSEndpoints`` knows them).
    /// `outOfDescriptors` tells whether the process has no descriptor left (asked only for a
    /// failure that may come of one; the tests give the answer).
    static func line(
        code: Int, text: String, url: URL?, segmented: Bool = false, answeredBefore: Bool = false, tls: UploadConfiguration.TLS? = nil,
        rotationProblem: String? = nil, outOfDescriptors: @autoclosure () -> Bool = DescriptorLimit.isExhausted()
    ) -> String {
        let target = url.map(SessionURL.authority(of:)) ?? "the server"
        // Foundation's stand-in when there is no text: "The operation could not be completed. (…)"
        let detail = text.isEmpty || text.hasPrefix("The operation could not be completed") ? nil : text
        // A connection that could not even be tried for want of a descriptor is this process's
        // open-files limit, not the network: say so, never "check the firewall".
        if outOfDescriptorsCodes.contains(code) || connectPrefixes.contains(where: text.hasPrefix), outOfDescriptors() {
            return
                "cannot connect to \(target): this process has run out of open files (RLIMIT_NOFILE \(DescriptorLimit.current.soft)): raise the limit (LimitNOFILE= in a systemd unit, ulimit -n) or follow fewer files and pipelines"
        }
        let facts = Facts(
            target: target, detail: detail, code: code, proxy: proxy(in: text, target: url), segmented: segmented, answeredBefore: answeredBefore,
            tls: tls, rotationProblem: rotationProblem)
        let rule = rules.first { $0.matches(code: code, text: text, tls: tls) } ?? rules[rules.count - 1]
        return rule.sentence(facts)
    }

    /// The address in libcurl's "Failed to connect to HOST port N after …" when it is not the
    /// URL's own host and port: the proxy libcurl went through (from `http_proxy` and the like).
    static func proxy(in text: String, target url: URL?) -> String? {
        guard let url, let range = text.range(of: "Failed to connect to ") else { return nil }
        let words = text[range.upperBound...].split(separator: " ")
        guard words.count >= 3, words[1] == "port", let port = Int(words[2]) else { return nil }
        let host = String(words[0])
        let targetHost = (URLComponents(url: url, resolvingAgainstBaseURL: true)?.host ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let targetPort = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        guard host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) != targetHost || port != targetPort else { return nil }
        return (host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host) + ":\(port)"
    }
}
