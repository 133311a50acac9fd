import Foundation
import StreamUpTestSupport
import Testing

/// HTTPS through the built binary, against real TLS servers on 127.0.0.1 (Python's `ssl`, and
/// nginx requiring client certificates) with certificates made by `openssl` for the test: what
/// only the process shows (exit statuses, the one line on stderr, the system's trust store, the
/// options on the command line). The library's behaviour (files checked, rotation, the hook's
/// scope) is tested in-process (StreamUpTests: TLSUploadTests, TLSFilesTests).
@Suite(.serialized, .timeLimit(.minutes(2))) struct TLSCommandTests {
    /// The remedy every untrusted-issuer line ends with when no CA file was given.
    static let trustStoreRemedy =
        "give that CA's certificate with --cacert FILE (PEM), or add it to the system's store (Debian: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates)"

    /// A server whose certificate no CA in the system store issued (a private CA's, or a
    /// self-signed one): one line that says so and how to trust the CA, exit 2, and no request
    /// reached the server, in the default (segmented) mode and with --single-request. Given that
    /// CA with `--cacert`, the same command delivers every byte.
    @Test(.needsOpenSSL, arguments: [([], TestCertificates.Kind.selfSigned), (["--single-request"], .signedByTestCA)])
    func untrustedCertificateIsOneLineAndCacertDelivers(mode: [String], kind: TestCertificates.Kind) async throws {
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

        let input = (1...300).map { "line \($0): é ✓\n" }.joined()
        let trusting = try StreamupProcess(mode + ["--cacert", kind == .selfSigned ? certificate : certificates.caCertificate, server.url])
        trusting.write(input)
        trusting.closeStdin()
        #expect(await trusting.waitForExit() == 0, "stderr: \(trusting.stderr)")
        #expect(server.requests.map(\.body).joined() == input)
        await server.stop()
    }

    /// `--cert`/`--key` through nginx with `ssl_verify_client on` to the sink (plain HTTP behind
    /// it): the client certificate is presented and every byte arrives; without one nginx
    /// answers 400, and the line says what to give. A key that is not the certificate's stops
    /// streamup before anything is sent (exit 64, one line).
    @Test(.needsOpenSSL, .enabled(if: Nginx.isAvailable)) func clientCertificateThroughNginx() async throws {
        let certificates = try await TestCertificates([.signedByTestCA, .client, .secondClient])
        let (serverCertificate, serverKey) = certificates.files(.signedByTestCA)
        let (certificate, key) = certificates.files(.client)
        let tls = Nginx.TLS(certificate: serverCertificate, key: serverKey, clientCA: certificates.caCertificate)
        try await withSink { sink, directory in
            try await Nginx.with(proxyingTo: sink.url, tls: tls) { nginx in
                let url = nginx.url.absoluteString + "ingest"
                let input = (1...200).map { "mTLS line \($0)\n" }.joined()
                let presenting = try StreamupProcess(["--cacert", certificates.caCertificate, "--cert", certificate, "--key", key, url])
                presenting.write(input)
                presenting.closeStdin()
                #expect(await presenting.waitForExit() == 0, "stderr: \(presenting.stderr)")
                #expect(streamText(in: directory) == input)

                let without = try StreamupProcess(["--cacert", certificates.caCertificate, url])
                without.write("x\n")
                without.closeStdin()
                #expect(await without.waitForExit() == 1)
                #expect(
                    without.stderr.hasPrefix(
                        "streamup: server answered 400 Bad Request: 400 Bad Request No required SSL certificate was sent nginx/1.22.1; the server wants a client certificate: give it with --cert FILE and its key with --key FILE (PEM)"
                    ), "stderr: \(without.stderr)")

                let mismatched = try StreamupProcess([
                    "--cacert", certificates.caCertificate, "--cert", certificate, "--key", certificates.files(.secondClient).key, url,
                ])
                mismatched.closeStdin()
                #expect(await mismatched.waitForExit() == 64)
                #expect(
                    mismatched.stderr
                        == "streamup: the key in --key \(certificates.files(.secondClient).key) does not belong to the certificate in --cert \(certificate): give the key the certificate was made for\n"
                )
                #expect(nginx.accessLog.split(separator: "\n").count == 2, "\(nginx.accessLog)")
            }
        }
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
}

extension Trait where Self == ConditionTrait {
    /// The test makes its certificates with `openssl`: skipped where it is missing, except under CI.
    fileprivate static var needsOpenSSL: Self {
        .enabled(if: OptionalTool.openssl.isAvailable, Comment(rawValue: OptionalTool.openssl.skipReason))
    }
}
