import Foundation
import StreamUpTestSupport
import Testing

/// HTTPS as URLSession on Linux allows it (DESIGN.md fact 8), against a real TLS server on
/// 127.0.0.1 (Python's `ssl`) with certificates made by `openssl` for the test.
@Suite(.timeLimit(.minutes(2))) struct TLSCommandTests {
    /// The remedy every untrusted-issuer line ends with.
    static let trustStoreRemedy = "streamup trusts only the system's CA store; add the CA's certificate to it (Debian: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates)"

    /// A server whose certificate no CA in the system store issued (a private CA's, or a
    /// self-signed one): one line that says so and how to trust the CA, exit 2, and no request
    /// reached the server. In the default (segmented) mode it used to be retried for a minute,
    /// printing a "delivery is failing" line first: the failure came as URLError -1 with
    /// libcurl's text, which the retry policy did not take for a certificate problem.
    @Test(arguments: [[], ["--single-request"]], [TestCertificates.Kind.signedByTestCA, .selfSigned])
    func untrustedCertificateIsOneLine(mode: [String], kind: TestCertificates.Kind) async throws {
        let certificates = try await TestCertificates()
        let (certificate, key) = certificates.files(kind)
        let server = try await TLSServer(certificate: certificate, key: key)
        let child = try StreamupProcess(mode + [server.url])
        child.write("hello\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
        let detail = kind == .selfSigned ? "self-signed certificate" : "unable to get local issuer certificate"
        let lines = child.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty, "stderr: \(child.stderr)")
        #expect(child.stderr.hasPrefix(
            "streamup: the TLS certificate of 127.0.0.1:\(server.port) is not issued by a CA this system trusts (\(detail)): \(Self.trustStoreRemedy)"),
            "stderr: \(child.stderr)")
        #expect(server.requests.isEmpty)
        await server.stop()
    }

    /// README's procedure works end to end: with the private CA copied to
    /// /usr/local/share/ca-certificates/ and update-ca-certificates run (in a private mount
    /// namespace, see ``TrustStoreSandbox``), the same server is trusted and the lines arrive;
    /// a certificate of that CA for another name, or an expired one, is refused with a line
    /// that names that problem. The machine's own trust store is unchanged afterwards.
    @Test(.enabled(if: TrustStoreSandbox.isAvailable, "needs root and mount namespaces (unshare)"))
    func privateCATrustedThroughTheSystemStore() async throws {
        let certificates = try await TestCertificates()
        let work = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        // Trusted: the body arrives, the server's answer is printed.
        let (certificate, key) = certificates.files(.signedByTestCA)
        let server = try await TLSServer(certificate: certificate, key: key)
        let child = try TrustStoreSandbox.streamup(trusting: certificates.caCertificate, [server.url], work: work.appendingPathComponent("1"))
        child.write("over TLS\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
        #expect(child.stdout == #"{"bytes": 9}"# + "\n")
        // The server prints each request before answering it; its output is read on a thread.
        #expect(await eventually { server.requests.map(\.body) == ["over TLS\n"] })
        await server.stop()

        // Trusted issuer, but the wrong name or out of date: one line naming that.
        for (kind, expected) in [
            (TestCertificates.Kind.wrongName, "is for another name (no alternative certificate subject name matches target host name '127.0.0.1'): connect by a name the certificate holds, or have the server present one for this name"),
            (.expired, "is out of date (certificate has expired): the server needs a current certificate (or this machine's clock is wrong)"),
        ] {
            let (certificate, key) = certificates.files(kind)
            let server = try await TLSServer(certificate: certificate, key: key)
            let child = try TrustStoreSandbox.streamup(
                trusting: certificates.caCertificate, ["--single-request", server.url], work: work.appendingPathComponent(kind.rawValue))
            child.write("x\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 2)
            #expect(child.stderr == "streamup: the TLS certificate of 127.0.0.1:\(server.port) \(expected)\n")
            #expect(server.requests.isEmpty)
            await server.stop()
        }

        // The machine's store never saw the test CA.
        let ca = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        let base64 = ca.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined(separator: "\n")
        let bundle = try String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8)
        #expect(!bundle.contains(base64))
        #expect(!FileManager.default.fileExists(atPath: "/usr/local/share/ca-certificates/streamup-test.crt"))
    }

    /// curl's TLS options cannot work through URLSession on Linux: each is a usage error that
    /// says what to do instead, never an option that is accepted and ignored.
    @Test(arguments: [
        (["--cacert", "ca.pem"], "streamup: --cacert/--capath: URLSession on Linux trusts only the system's CA store; add the CA to the system store instead: copy it to /usr/local/share/ca-certificates/NAME.crt (PEM, .crt) and run update-ca-certificates\n"),
        (["-k"], "streamup: -k: URLSession on Linux cannot skip certificate checks; add the CA to the system store instead: copy it to /usr/local/share/ca-certificates/NAME.crt (PEM, .crt) and run update-ca-certificates\n"),
        (["--cert", "client.pem"], "streamup: --cert/--key: URLSession on Linux cannot send a client certificate; reach the server through a local TLS proxy that holds it (stunnel, nginx)\n"),
    ])
    func curlTLSOptionsAreRefused(options: [String], message: String) async throws {
        let child = try StreamupProcess(options + ["https://127.0.0.1:9/"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == message)
    }
}
