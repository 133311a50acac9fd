import Foundation
import Testing

@testable import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``TransportFailure``: each failure URLSession reports on Linux (a `URLError` code and
/// libcurl's text, as measured against real servers) becomes one line that says what happened
/// and what to do, with no raw `URLError` code unless nothing better is known.
@Suite struct TransportFailureTests {
    /// One measured failure and the line it must become.
    struct Case: Sendable, CustomTestStringConvertible {
        let code: Int
        let text: String
        let url: String
        let line: String
        /// Whether the request was a segment (already short: no advice to send shorter ones).
        var segmented = false
        /// Whether the server answered an earlier request (its port speaks HTTP).
        var answeredBefore = false
        /// The TLS files the endpoint has (`--cacert`, `--cert`, …).
        var tls: UploadConfiguration.TLS?
        /// Why files changed on disk were not used.
        var rotationProblem: String?
        var testDescription: String {
            "\(code) \(text)\(segmented ? " (segmented)" : "")\(answeredBefore ? " (answered before)" : "")\(tls == nil ? "" : " (TLS files)")"
        }
    }

    /// The sentences several measured texts share.
    static func refused(_ target: String) -> String {
        "connection refused by \(target): nothing is listening there; check the host and port, and that the server runs"
    }

    static func closedMidBody(_ target: String, _ reason: String) -> String {
        "\(target) closed the connection while the body was being sent, without answering (\(reason)): often a server's or proxy's limit on long or idle request bodies; send shorter requests (segmented delivery) or raise that limit"
    }

    static func untrusted(_ target: String, _ reason: String) -> String {
        "the TLS certificate of \(target) is not issued by a CA this system trusts (\(reason)): give that CA's certificate with --cacert FILE (PEM), or add it to the system's store (Debian: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates)"
    }

    /// The files of an endpoint with a private CA and a client certificate.
    static let clientFiles = UploadConfiguration.TLS(
        caCertificates: URL(fileURLWithPath: "/etc/streamup/ca.pem"), clientCertificate: URL(fileURLWithPath: "/etc/streamup/client.pem"),
        clientKey: URL(fileURLWithPath: "/etc/streamup/client.key"))

    static let cases: [Case] = [
        Case(
            code: -1004, text: "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server", url: "http://127.0.0.1:1/",
            line: refused("127.0.0.1:1")),
        Case(code: -1004, text: "Failed to connect to ::1 port 9 after 0 ms: Couldn't connect to server", url: "http://[::1]:9/", line: refused("[::1]:9")),
        Case(
            code: -1004, text: "Failed to connect to 127.0.0.1 port 3128 after 0 ms: Couldn't connect to server", url: "http://logs.example/in",
            line: "connection refused by the proxy 127.0.0.1:3128 on the way to logs.example: check http_proxy, https_proxy and no_proxy"),
        Case(
            code: -1, text: "Could not resolve proxy: proxy.corp", url: "https://logs.example/",
            line: "cannot resolve the proxy proxy.corp on the way to logs.example: check http_proxy, https_proxy and no_proxy"),
        Case(
            code: -1003, text: "Could not resolve host: logs.example", url: "https://logs.example/",
            line: "cannot resolve host logs.example: check its spelling and this machine's DNS settings"),
        Case(
            code: -1001, text: "The request timed out.", url: "http://127.0.0.1:8080/",
            line: "127.0.0.1:8080 did not answer within the response timeout: check that the server is up and not overloaded, or raise the timeout"),
        Case(
            code: -1001, text: "Failed to connect to 10.0.0.9 port 80 after 60000 ms: Connection timed out", url: "http://10.0.0.9/",
            line: "connecting to 10.0.0.9 timed out: check that the address is right and reachable (a firewall may drop the packets)"),
        Case(code: -1, text: "Send failure: Broken pipe", url: "http://127.0.0.1:8080/", line: closedMidBody("127.0.0.1:8080", "Broken pipe")),
        Case(
            code: -1005, text: "Send failure: Connection reset by peer", url: "http://127.0.0.1:8080/",
            line: closedMidBody("127.0.0.1:8080", "Connection reset by peer")),
        // A segment closed mid-body (after a server restart): no advice to send shorter requests.
        Case(
            code: -1, text: "Send failure: Broken pipe", url: "http://127.0.0.1:8080/",
            line:
                "127.0.0.1:8080 closed the connection while the body was being sent, without answering (Broken pipe): the server or a proxy in front of it restarted or dropped the request (a limit on request bodies, an idle timeout); check its logs",
            segmented: true),
        Case(
            code: -1005, text: "Recv failure: Connection reset by peer", url: "http://127.0.0.1:8080/",
            line:
                "the connection to 127.0.0.1:8080 was reset before an answer came: the server or a proxy in front of it dropped the request (crashed, restarted or refused it); check its logs"
        ),
        Case(
            code: -1011, text: "Empty reply from server", url: "http://127.0.0.1:8080/",
            line:
                "127.0.0.1:8080 closed the connection without answering: the server or a proxy in front of it dropped the request; check its logs, and that the port speaks plain HTTP (https:// if it expects TLS)"
        ),
        // A server that answered earlier requests speaks HTTP there: no advice on the scheme.
        Case(
            code: -1011, text: "Empty reply from server", url: "http://127.0.0.1:8080/",
            line:
                "127.0.0.1:8080 closed the connection without answering, though it answered earlier requests: the server or a proxy in front of it dropped this one (a limit on request bodies or memory, a restart); check its logs",
            answeredBefore: true),
        Case(
            code: -1002, text: "Received HTTP/0.9 when not allowed", url: "http://127.0.0.1:22/",
            line: "127.0.0.1:22 answered something that is not HTTP: check the port, and use https:// if it expects TLS"),
        // Certificates, as libcurl 7.88 with OpenSSL 3.0 words them (measured against a Python
        // ssl server with certificates from openssl; TLSCommandTests).
        Case(
            code: -1, text: "SSL certificate problem: self-signed certificate", url: "https://localhost:8443/",
            line: untrusted("localhost:8443", "self-signed certificate")),
        Case(
            code: -1, text: "SSL certificate problem: unable to get local issuer certificate", url: "https://127.0.0.1:8443/",
            line: untrusted("127.0.0.1:8443", "unable to get local issuer certificate")),
        Case(
            code: -1, text: "SSL: no alternative certificate subject name matches target host name '127.0.0.1'", url: "https://127.0.0.1:8443/",
            line:
                "the TLS certificate of 127.0.0.1:8443 is for another name (no alternative certificate subject name matches target host name '127.0.0.1'): connect by a name the certificate holds, or have the server present one for this name"
        ),
        Case(
            code: -1, text: "SSL certificate problem: certificate has expired", url: "https://127.0.0.1:8443/",
            line:
                "the TLS certificate of 127.0.0.1:8443 is out of date (certificate has expired): the server needs a current certificate (or this machine's clock is wrong)"
        ),
        Case(
            code: -1, text: "SSL certificate problem: certificate revoked", url: "https://127.0.0.1:8443/",
            line:
                "the TLS certificate of 127.0.0.1:8443 was refused (certificate revoked): check the server's certificate; a private CA is given with --cacert FILE"
        ),
        // The CA given with --cacert did not issue the server's certificate.
        Case(
            code: -1, text: "SSL certificate problem: unable to get local issuer certificate", url: "https://127.0.0.1:8443/",
            line:
                "the TLS certificate of 127.0.0.1:8443 is not issued by a CA in --cacert /etc/streamup/ca.pem (unable to get local issuer certificate): give the CA that issued it (the server may also need to send its intermediate certificates)",
            tls: clientFiles),
        // Client certificates, as libcurl 7.88 with OpenSSL 3.0 words a TLS 1.3 server's alerts
        // (Python's ssl with CERT_REQUIRED; TLSUploadTests).
        Case(
            code: -1, text: "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
            url: "https://127.0.0.1:8443/",
            line: "127.0.0.1:8443 wants a client certificate (tlsv13 alert certificate required): give it with --cert FILE and its key with --key FILE (PEM)"),
        // A TLS 1.2 server (Python's ssl, maximum_version TLSv1_2) that wants one.
        Case(
            code: -1, text: "OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure", url: "https://127.0.0.1:8443/",
            line:
                "the TLS handshake with 127.0.0.1:8443 failed (sslv3 alert handshake failure): the server may want a client certificate (--cert FILE and --key FILE), or share no TLS version or cipher with this system's OpenSSL"
        ),
        Case(
            code: -1, text: "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000418:SSL routines::tlsv1 alert unknown ca, errno 0", url: "https://127.0.0.1:8443/",
            line:
                "127.0.0.1:8443 refused the client certificate in --cert /etc/streamup/client.pem (tlsv1 alert unknown ca): check that a CA the server trusts issued it and that it is in date and not revoked; a renewed file is used from the next connection",
            tls: clientFiles),
        Case(
            code: -1, text: "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000415:SSL routines::sslv3 alert certificate expired, errno 0",
            url: "https://127.0.0.1:8443/",
            line:
                "127.0.0.1:8443 refused the client certificate in --cert /etc/streamup/client.pem (sslv3 alert certificate expired): check that a CA the server trusts issued it and that it is in date and not revoked; a renewed file is used from the next connection; files changed on disk were not used: the key in /etc/streamup/client.key does not belong to the certificate in /etc/streamup/client.pem; the files read before stay in use",
            tls: clientFiles,
            rotationProblem:
                "the key in /etc/streamup/client.key does not belong to the certificate in /etc/streamup/client.pem; the files read before stay in use"),
        Case(
            code: -1,
            text:
                "could not load PEM client certificate from CURLOPT_SSLCERT_BLOB, OpenSSL error error:0480006C:PEM routines::no start line, (no key found, wrong pass phrase, or wrong file format?)",
            url: "https://127.0.0.1:8443/",
            line:
                "the TLS files for 127.0.0.1:8443 could not be used (could not load PEM client certificate from CURLOPT_SSLCERT_BLOB, OpenSSL error error:0480006C:PEM routines::no start line, (no key found, wrong pass phrase, or wrong file format?)): check that --cacert, --cert and --key hold PEM certificates and the certificate's own key",
            tls: clientFiles),
        Case(
            code: -1, text: "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number", url: "https://127.0.0.1:8080/",
            line:
                "the TLS handshake with 127.0.0.1:8080 failed (OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number): check that the port speaks TLS (https://), or use http://"
        ),
        Case(
            code: -1, text: "Failed to connect to 192.0.2.1 port 80 after 3 ms: No route to host", url: "http://192.0.2.1/",
            line: "cannot connect to 192.0.2.1 (192.0.2.1 port 80 after 3 ms: No route to host): check the address, the network and any firewall"),
        Case(
            code: -1, text: "CONNECT tunnel failed, response 407", url: "https://logs.example/",
            line:
                "the proxy would not open a tunnel to logs.example (CONNECT tunnel failed, response 407): check http_proxy, https_proxy and no_proxy, and the proxy's credentials"
        ),
        Case(
            code: -1000, text: "The operation could not be completed. (NSURLErrorDomain error -1000.)", url: "http://h.example/",
            line: "URLSession refused the URL for h.example (no details): check the URL"),
        Case(
            code: -1, text: "Some failure nobody has seen", url: "http://h.example/",
            line: "the connection to h.example failed: Some failure nobody has seen (URLError -1); check the URL, the network and the server"),
    ]

    /// Every measured failure gets its line.
    @Test(arguments: cases) func failureBecomesItsLine(_ failure: Case) {
        #expect(
            TransportFailure.line(
                code: failure.code, text: failure.text, url: URL(string: failure.url), segmented: failure.segmented, answeredBefore: failure.answeredBefore,
                tls: failure.tls, rotationProblem: failure.rotationProblem)
                == failure.line)
    }

    /// The `URLError` path: the code and text come from the error; cancellation is its own code.
    @Test func urlErrorsAreReadForCodeAndText() {
        let url = URL(string: "http://127.0.0.1:8080/")
        let broken = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "Send failure: Broken pipe"])
        let error = TransportFailure.error(for: broken, url: url)
        #expect(error.code == .transport && error.urlError?.code == .unknown)
        #expect(error.description.hasPrefix("127.0.0.1:8080 closed the connection while the body was being sent"))
        #expect(TransportFailure.error(for: URLError(.cancelled), url: url).code == .cancelled)
    }

    /// Certificate failures are recognised by libcurl's text (Linux: code -1) or by Darwin's
    /// codes, so that delivery does not retry them; a handshake with a port that does not speak
    /// TLS is not one.
    @Test(arguments: [
        (-1, "SSL certificate problem: self-signed certificate", true),
        (-1, "SSL: no alternative certificate subject name matches target host name 'a'", true),
        (URLError.Code.serverCertificateUntrusted.rawValue, "", true),
        (-1, "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number", false),
        (-1, "Send failure: Broken pipe", false),
        // A server that wants a client certificate and got none: final. One that refused the
        // certificate it got: retried (a renewed file is used at the next connection).
        (-1, "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0", true),
        (-1, "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000418:SSL routines::tlsv1 alert unknown ca, errno 0", false),
    ])
    func certificateFailuresAreRecognised(code: Int, text: String, isCertificate: Bool) {
        #expect(TransportFailure.isCertificateFailure(code: code, text: text) == isCertificate)
    }

    /// Every line is one line, and no row but the last falls back to printing the raw code.
    @Test func everyRuleSaysOneLineWithoutTheRawCode() {
        let facts = TransportFailure.Facts(target: "[::1]:8080", detail: "detail", code: -1, proxy: nil)
        for rule in TransportFailure.rules.dropLast() {
            let line = rule.sentence(facts)
            #expect(!line.contains("\n") && !line.contains("URLError"), "\(line)")
        }
    }

    /// A connection that could not be made because the process has no descriptor left is said
    /// as the open-files limit, not as the network ("check … any firewall"): libcurl says
    /// "Failed to connect … Couldn't connect to server" for both.
    @Test func runningOutOfDescriptorsIsNotANetworkFailure() {
        let text = "Failed to connect to 127.0.0.1 port 8080 after 0 ms: Couldn't connect to server"
        let url = URL(string: "http://127.0.0.1:8080/")
        let out = TransportFailure.line(code: -1, text: text, url: url, outOfDescriptors: true)
        #expect(out.hasPrefix("cannot connect to 127.0.0.1:8080: this process has run out of open files (RLIMIT_NOFILE "), "\(out)")
        #expect(!out.contains("firewall"))
        #expect(TransportFailure.line(code: -1, text: text, url: url, outOfDescriptors: false).contains("firewall"))
        // A failure no descriptor could cause never asks.
        let certificate = TransportFailure.line(code: -1, text: "SSL certificate problem: self-signed certificate", url: url, outOfDescriptors: true)
        #expect(certificate.hasPrefix("the TLS certificate"), "\(certificate)")
    }
}
