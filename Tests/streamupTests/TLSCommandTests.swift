import Foundation
import StreamUpTestSupport
import Testing

/// HTTPS as URLSession on Linux allows it (DesignNotes, platform fact 8), against a real TLS server on
/// 127.0.0.1 (Python's `ssl`) with certificates made by `openssl` for the test.
@Suite(.serialized, .timeLimit(.minutes(2))) struct TLSCommandTests {
    /// The remedy every untrusted-issuer line ends with.
    static let trustStoreRemedy =
        "streamup trusts only the system's CA store; add the CA's certificate to it (Debian: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates)"

    /// A server whose certificate no CA in the system store issued (a private CA's, or a
    /// self-signed one): one line that says so and how to trust the CA, exit 2, and no request
    /// reached the server. In the default (segmented) mode it used to be retried for a minute,
    /// printing a "delivery is failing" line first: the failure came as URLError -1 with
    /// libcurl's text, which the retry policy did not take for a certificate problem.
    @Test(.needsOpenSSL, arguments: [[], ["--single-request"]], [TestCertificates.Kind.signedByTestCA, .selfSigned])
    func untrustedCertificateIsOneLine(mode: [String], kind: TestCertificates.Kind) async throws {
        let certificates = try await TestCertificates([kind])
        let (certificate, key) = certificates.files(kind)
        let server = try await TLSServer(certificate: certificate, key: key)
        let child = try StreamupProcess(mode + [server.url])
        child.write("hello\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 2)
        let detail = kind == .selfSigned ? "self-signed certificate" : "unable to get local issuer certificate"
        let lines = child.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty, "stderr: \(child.stderr)")
        #expect(
            child.stderr.hasPrefix(
                "streamup: the TLS certificate of 127.0.0.1:\(server.port) is not issued by a CA this system trusts (\(detail)): \(Self.trustStoreRemedy)"),
            "stderr: \(child.stderr)")
        #expect(server.requests.isEmpty)
        await server.stop()
    }

    /// With `--dead-letter`, a stream whose only segment met an untrusted certificate says
    /// why and where that segment was kept, then sums up in a line of its own, and exits 1
    /// (something was set aside), not 2 with "no answer from the server".
    @Test(.needsOpenSSL) func untrustedCertificateWithDeadLettersSaysWhyAndWhere() async throws {
        let certificates = try await TestCertificates([.selfSigned])
        let (certificate, key) = certificates.files(.selfSigned)
        let server = try await TLSServer(certificate: certificate, key: key)
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let dead = work.appendingPathComponent("dead").path
        let child = try StreamupProcess(["--dead-letter", dead, server.url])
        child.write("hello\n")
        child.closeStdin()
        #expect(await child.waitForExit() == 1, "stderr: \(child.stderr)")
        let lines = child.stderr.split(separator: "\n")
        #expect(lines.count == 2, "stderr: \(child.stderr)")
        #expect(
            lines.first?.contains("is not issued by a CA this system trusts") == true && lines.first?.contains("kept the segment (6 bytes) in \(dead)") == true,
            "stderr: \(child.stderr)")
        #expect(lines.last == "streamup: 1 segment was not delivered (6 bytes) and kept in \(dead) (--dead-letter)", "stderr: \(child.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: dead).filter { $0.hasSuffix(".body") }
        #expect(try kept.map { try String(contentsOfFile: dead + "/" + $0, encoding: .utf8) } == ["hello\n"])
        await server.stop()
    }

    /// README's procedure works end to end: with the private CA copied to
    /// /usr/local/share/ca-certificates/ and update-ca-certificates run (in a private mount
    /// namespace, see ``TrustStoreSandbox``), the same server is trusted and the lines arrive;
    /// a certificate of that CA for another name, or an expired one, is refused with a line
    /// that names that problem. The machine's own trust store is unchanged afterwards.
    @Test(.needsOpenSSL, .enabled(if: TrustStoreSandbox.isAvailable, "needs root and mount namespaces (unshare)"))
    func privateCATrustedThroughTheSystemStore() async throws {
        let certificates = try await TestCertificates([.signedByTestCA, .wrongName, .expired])
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        var servers: [TLSServer] = []
        for kind in [TestCertificates.Kind.signedByTestCA, .wrongName, .expired] {
            let (certificate, key) = certificates.files(kind)
            servers.append(try await TLSServer(certificate: certificate, key: key))
        }
        let runs = try await TrustStoreSandbox.streamup(
            trusting: certificates.caCertificate,
            runs: [
                ([servers[0].url], "over TLS\n"),
                (["--single-request", servers[1].url], "x\n"),
                (["--single-request", servers[2].url], "x\n"),
            ], work: work.appendingPathComponent("sandbox"))

        // Trusted: the body arrives, the server's answer is printed.
        #expect(runs[0].status == 0, "stderr: \(runs[0].stderr)")
        #expect(runs[0].stdout == #"{"bytes": 9}"# + "\n")
        // The server prints each request before answering it; its output is read on a thread.
        #expect(await eventually { servers[0].requests.map(\.body) == ["over TLS\n"] })

        // Trusted issuer, but the wrong name or out of date: one line naming that.
        #expect(runs[1].status == 2)
        #expect(
            runs[1].stderr
                == "streamup: the TLS certificate of 127.0.0.1:\(servers[1].port) is for another name (no alternative certificate subject name matches target host name '127.0.0.1'): connect by a name the certificate holds, or have the server present one for this name\n"
        )
        #expect(runs[2].status == 2)
        #expect(
            runs[2].stderr
                == "streamup: the TLS certificate of 127.0.0.1:\(servers[2].port) is out of date (certificate has expired): the server needs a current certificate (or this machine's clock is wrong)\n"
        )
        #expect(servers[1].requests.isEmpty && servers[2].requests.isEmpty)
        for server in servers { await server.stop() }

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
        (
            ["--cacert", "ca.pem"],
            "streamup: --cacert/--capath: URLSession on Linux trusts only the system's CA store; add the CA to the system store instead: copy it to /usr/local/share/ca-certificates/NAME.crt (PEM, .crt) and run update-ca-certificates\n"
        ),
        (
            ["-k"],
            "streamup: -k: URLSession on Linux cannot skip certificate checks; add the CA to the system store instead: copy it to /usr/local/share/ca-certificates/NAME.crt (PEM, .crt) and run update-ca-certificates\n"
        ),
        (
            ["--cert", "client.pem"],
            "streamup: --cert/--key: URLSession on Linux cannot send a client certificate; reach the server through a local TLS proxy that holds it (stunnel, nginx)\n"
        ),
    ])
    func curlTLSOptionsAreRefused(options: [String], message: String) async throws {
        let child = try StreamupProcess(options + ["https://127.0.0.1:9/"])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == message)
    }
}

extension Trait where Self == ConditionTrait {
    /// The test makes its certificates with `openssl`: skipped where it is missing, except under CI.
    fileprivate static var needsOpenSSL: Self {
        .enabled(if: OptionalTool.openssl.isAvailable, Comment(rawValue: OptionalTool.openssl.skipReason))
    }
}
