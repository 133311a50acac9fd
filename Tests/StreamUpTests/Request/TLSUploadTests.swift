import CStreamUpCurl
import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `UploadConfiguration.tls` against real TLS servers on 127.0.0.1 (Python's `ssl`, with and
/// without a required client certificate) with certificates `openssl` makes for each test: a
/// private CA delivers byte for byte, a client certificate is presented and rotated on disk
/// without a restart, and what the hook does stays with the endpoints it was given.
extension InProcessUploads {
    @Suite(.timeLimit(.minutes(2)), .enabled(if: OptionalTool.openssl.isAvailable, Comment(rawValue: OptionalTool.openssl.skipReason)))
    struct TLSUploadTests {
        /// Runs `body` with a server presenting `kind`'s certificate (requiring a client
        /// certificate from the test CA with `requireClient`), and stops it on every path.
        private static func withServer<T>(
            _ certificates: TestCertificates, _ kind: TestCertificates.Kind = .signedByTestCA, requireClient: Bool = false,
            _ body: (TLSServer) async throws -> T
        ) async throws -> T {
            let (certificate, key) = certificates.files(kind)
            let server = try await TLSServer(certificate: certificate, key: key, clientCA: requireClient ? certificates.caCertificate : nil)
            let result: Result<T, Error>
            do {
                result = .success(try await body(server))
            } catch {
                result = .failure(error)
            }
            await server.stop()
            return try result.get()
        }

        /// An uploader to `server` with `tls`, cutting a request at every line (a few ms apart).
        private static func uploader(_ server: TLSServer, tls: UploadConfiguration.TLS?, retries: Int = 0) throws -> StreamUploader {
            var configuration = UploadConfiguration(url: URL(string: server.url)!)
            configuration.tls = tls
            var options = StreamUploader.Options()
            options.segmentBytes = 64
            options.segmentDuration = .milliseconds(20)
            options.retry = RetryPolicy(maxRetries: retries)
            options.retry.baseDelay = .milliseconds(10)
            return try StreamUploader(configuration, options: options)
        }

        /// The line `uploader` fails with, or nil when it delivered.
        private static func failure(of uploader: StreamUploader, lines: [String]) async -> String? {
            do {
                _ = try await uploader.run(ChunksProducer(chunks: lines.map { Array($0.utf8) }))
                return nil
            } catch {
                return "\(error)"
            }
        }

        private static func files(_ certificates: TestCertificates, _ kind: TestCertificates.Kind) -> UploadConfiguration.TLS {
            let (certificate, key) = certificates.files(kind)
            return UploadConfiguration.TLS(
                caCertificates: URL(fileURLWithPath: certificates.caCertificate), clientCertificate: URL(fileURLWithPath: certificate),
                clientKey: URL(fileURLWithPath: key))
        }

        /// `--cacert`: with the CA that issued the server's certificate every byte arrives, over
        /// several requests (multi-byte UTF-8 too); without it, or with another CA, the upload
        /// stops at once with one line that names what to give, and the server got nothing.
        @Test func privateCADeliversByteExactAndWithoutItTheLineSaysWhatToGive() async throws {
            let certificates = try await TestCertificates([.signedByTestCA])
            try await Self.withServer(certificates) { server in
                let port = server.port
                let none = try Self.uploader(server, tls: nil)
                #expect(
                    await Self.failure(of: none, lines: ["x\n"])?.hasPrefix(
                        "the TLS certificate of 127.0.0.1:\(port) is not issued by a CA this system trusts (unable to get local issuer certificate): give that CA's certificate with --cacert FILE (PEM), or add it to the system's store"
                    ) == true)
                let other = try Self.uploader(server, tls: .init(caCertificates: URL(fileURLWithPath: certificates.otherCACertificate)))
                #expect(
                    await Self.failure(of: other, lines: ["x\n"])?.hasPrefix(
                        "the TLS certificate of 127.0.0.1:\(port) is not issued by a CA in --cacert \(certificates.otherCACertificate) (unable to get local issuer certificate): give the CA that issued it"
                    ) == true)
                #expect(server.requests.isEmpty && none.progress.retries == 0 && other.progress.retries == 0)

                let configured = streamup_tls_transfers_configured()
                let lines = (0..<10).map { "line \($0) of a stream, é ✓\n" }
                let trusting = try Self.uploader(server, tls: .init(caCertificates: URL(fileURLWithPath: certificates.caCertificate)))
                #expect(await Self.failure(of: trusting, lines: lines) == nil)
                #expect(server.requests.map(\.body).joined() == lines.joined())
                #expect(server.requests.count > 1)
                // Each request went through the hook with the endpoint's files.
                #expect(streamup_tls_transfers_configured() - configured >= UInt64(server.requests.count))
            }
        }

        /// `--cert`/`--key` to a server that requires a client certificate: presented and
        /// delivered. Without one, a line says the server wants one (final: no retry can help),
        /// also when the connection's reset lost the server's alert (a second connection reads
        /// it). One from a CA the server does not trust: a line naming it, retried (a renewed
        /// file would be used at the next connection).
        @Test func clientCertificateIsPresentedAndItsAbsenceOrRefusalNamed() async throws {
            let certificates = try await TestCertificates([.signedByTestCA, .client, .clientOfOtherCA])
            try await Self.withServer(certificates, requireClient: true) { server in
                let port = server.port
                let presenting = try Self.uploader(server, tls: Self.files(certificates, .client))
                #expect(await Self.failure(of: presenting, lines: ["one\n", "two\n"]) == nil)
                #expect(server.requests.map(\.body).joined() == "one\ntwo\n" && server.requests.allSatisfy { $0.client == "client" })
                let delivered = server.requests.count

                let without = try Self.uploader(server, tls: .init(caCertificates: URL(fileURLWithPath: certificates.caCertificate)))
                #expect(
                    await Self.failure(of: without, lines: ["x\n"])
                        == "127.0.0.1:\(port) wants a client certificate (tlsv13 alert certificate required): give it with --cert FILE and its key with --key FILE (PEM)"
                )
                #expect(without.progress.retries == 0)

                let stranger = try Self.uploader(server, tls: Self.files(certificates, .clientOfOtherCA), retries: 1)
                let refused = await Self.failure(of: stranger, lines: ["x\n"])
                #expect(
                    refused?.hasPrefix(
                        "127.0.0.1:\(port) refused the client certificate in --cert \(certificates.files(.clientOfOtherCA).certificate) (tlsv1 alert unknown ca): check that a CA the server trusts issued it"
                    ) == true, "\(refused ?? "delivered")")
                #expect(stranger.progress.retries == 1)
                #expect(server.requests.count == delivered)
            }
        }

        /// A client certificate renewed on disk (cert-manager renames new files into place) is
        /// presented from the next connection on, without a restart, and nothing is lost; while
        /// only the certificate is new and its key is not yet, the last good pair stays in use
        /// and the problem is kept for the failure line.
        @Test func renewedClientCertificateIsUsedForTheNextConnection() async throws {
            let certificates = try await TestCertificates([.signedByTestCA, .client, .secondClient])
            let scratch = try TemporaryDirectory()
            let certificate = scratch.url.appendingPathComponent("tls.crt")
            let key = scratch.url.appendingPathComponent("tls.key")
            func install(_ kind: TestCertificates.Kind, certificateOnly: Bool = false) throws {
                let (from, fromKey) = certificates.files(kind)
                let staged = scratch.url.appendingPathComponent("staged")
                try? FileManager.default.removeItem(at: staged)
                try FileManager.default.copyItem(atPath: from, toPath: staged.path)
                _ = rename(staged.path, certificate.path)
                guard !certificateOnly else { return }
                try? FileManager.default.removeItem(at: staged)
                try FileManager.default.copyItem(atPath: fromKey, toPath: staged.path)
                _ = rename(staged.path, key.path)
            }
            try install(.client)
            try await Self.withServer(certificates, requireClient: true) { server in
                var configuration = UploadConfiguration(url: URL(string: server.url)!)
                configuration.tls = .init(caCertificates: URL(fileURLWithPath: certificates.caCertificate), clientCertificate: certificate, clientKey: key)
                var options = StreamUploader.Options()
                options.segmentDuration = .milliseconds(10)
                let uploader = try StreamUploader(configuration, options: options)
                let run = Task { try await uploader.runWithoutProducer() }
                func send(_ line: String, expecting client: String) async throws {
                    let before = server.requests.count
                    try await uploader.bufferWriter.write(Array(line.utf8))
                    #expect(await eventually { server.requests.count > before }, "\(line)")
                    #expect(server.requests.last?.client == client, "\(line)")
                }
                try await send("first\n", expecting: "client")
                // When: the new certificate is in place, its key not yet.
                try install(.secondClient, certificateOnly: true)
                try await send("second\n", expecting: "client")
                #expect(TLSEndpoints.rotationProblem(for: configuration.url)?.contains("does not belong to the certificate in \(certificate.path)") == true)
                // When: the key follows.
                try install(.secondClient)
                try await send("third\n", expecting: "client2")
                #expect(TLSEndpoints.rotationProblem(for: configuration.url) == nil)
                uploader.finish()
                #expect(try await run.value.isSuccess)
                #expect(server.requests.map(\.body).joined() == "first\nsecond\nthird\n")
            }
        }

        /// Bad days a retry outlives, nothing lost: a client certificate renewed into an expired
        /// one is refused by the server, said in a line naming it, and retried until a current
        /// one is in place; a server that closes every TLS handshake is one line saying so.
        @Test func refusedCertificateIsRetriedUntilRenewedAndAClosedHandshakeIsSaid() async throws {
            let certificates = try await TestCertificates([.signedByTestCA, .client, .expiredClient])
            let scratch = try TemporaryDirectory()
            let certificate = scratch.url.appendingPathComponent("tls.crt")
            let key = scratch.url.appendingPathComponent("tls.key")
            func install(_ kind: TestCertificates.Kind) throws {
                let (from, fromKey) = certificates.files(kind)
                for (source, target) in [(fromKey, key), (from, certificate)] {
                    let staged = scratch.url.appendingPathComponent("staged")
                    try? FileManager.default.removeItem(at: staged)
                    try FileManager.default.copyItem(atPath: source, toPath: staged.path)
                    _ = rename(staged.path, target.path)
                }
            }
            try install(.client)
            try await Self.withServer(certificates, requireClient: true) { server in
                var configuration = UploadConfiguration(url: URL(string: server.url)!)
                configuration.tls = .init(caCertificates: URL(fileURLWithPath: certificates.caCertificate), clientCertificate: certificate, clientKey: key)
                var options = StreamUploader.Options()
                options.segmentDuration = .milliseconds(10)
                options.retry = RetryPolicy(maxRetries: nil)
                options.retry.baseDelay = .milliseconds(20)
                options.retry.maxDelay = .milliseconds(100)
                let events = EventRecorder<UploadEvent>()
                let uploader = try StreamUploader(configuration, options: options, onEvent: events.handler)
                let run = Task { try await uploader.runWithoutProducer() }
                try await uploader.bufferWriter.write(Array("first\n".utf8))
                #expect(await eventually { server.requests.count == 1 })
                // When: an expired certificate is renewed into place, and a line is written.
                try install(.expiredClient)
                try await uploader.bufferWriter.write(Array("second\n".utf8))
                let refused = events.waitFor { event in
                    guard case .retrying(let reason, _, _, _) = event.detail else { return false }
                    return reason.contains("refused the client certificate in --cert \(certificate.path) (sslv3 alert certificate expired)")
                }
                #expect(refused != nil, "\(events.all.map(\.description))")
                // Then: a current certificate ends the failures, and the line arrives.
                try install(.client)
                #expect(await eventually { server.requests.count == 2 })
                uploader.finish()
                #expect(try await run.value.isSuccess)
                #expect(server.requests.map(\.body) == ["first\n", "second\n"] && server.requests.allSatisfy { $0.client == "client" })
            }
            let closing = try await TLSServer.closingHandshakes()
            let dropped = try Self.uploader(closing, tls: nil, retries: 1)
            let line = await Self.failure(of: dropped, lines: ["x\n"])
            await closing.stop()
            #expect(
                line?.hasPrefix("the TLS handshake with 127.0.0.1:\(closing.port) failed (OpenSSL SSL_connect: Connection reset by peer") == true,
                "\(line ?? "delivered")")
            #expect(dropped.progress.retries == 1)
        }

        /// The hook acts on every URLSession transfer of the process, by endpoint: the app's own
        /// request to a registered endpoint gets its files, one to another endpoint does not, a
        /// redirect away from it takes the client certificate off the handle, and once the
        /// upload has ended nothing is left.
        @Test func filesStayWithTheirEndpointAndTheUpload() async throws {
            let certificates = try await TestCertificates([.signedByTestCA, .client])
            try await Self.withServer(certificates, requireClient: true) { registered in
                try await Self.withServer(certificates, requireClient: true) { elsewhere in
                    let uploader = try Self.uploader(registered, tls: Self.files(certificates, .client))
                    let session = URLSession(configuration: .ephemeral)
                    // The app's own requests while the uploader lives.
                    #expect(await Self.get(registered.url, session) == "200 {\"client\": \"client\"}")
                    #expect(await Self.get(elsewhere.url, session)?.hasPrefix("200") != true)
                    let away = elsewhere.url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                    let redirected = await Self.get("https://127.0.0.1:\(registered.port)/redirect/\(away)", session)
                    #expect(redirected?.hasPrefix("200") != true, "\(redirected ?? "no answer")")
                    #expect(!elsewhere.requests.contains { $0.client != nil })
                    // The upload ends: the endpoint has no files any more.
                    #expect(await Self.failure(of: uploader, lines: ["x\n"]) == nil)
                    #expect(await Self.get(registered.url, session)?.hasPrefix("200") != true)
                    session.invalidateAndCancel()
                }
            }
        }

        /// One set of files per endpoint in a process (the hook sees only the URL): a second
        /// upload with other files is refused when it is made; the same files are shared. The
        /// files are for `https` URLs.
        @Test func oneSetOfFilesPerEndpoint() throws {
            let url = URL(string: "https://127.0.0.1:9/a")!
            var first = UploadConfiguration(url: url)
            let ca = URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt")
            first.tls = .init(caCertificates: ca)
            let one = try StreamUploader(first)
            let same = try StreamUploader(first)
            var other = UploadConfiguration(url: URL(string: "https://127.0.0.1:9/b")!)
            other.tls = .init(caDirectory: URL(fileURLWithPath: "/etc/ssl/certs"))
            #expect {
                try StreamUploader(other)
            } throws: { error in
                "\(error)"
                    == "https://127.0.0.1:9 has other TLS files in another upload of this process, and an endpoint (scheme, host and port) has one set of --cacert, --capath, --cert and --key: give both the same files"
            }
            var plain = UploadConfiguration(url: URL(string: "http://127.0.0.1:9/")!)
            plain.tls = .init(caCertificates: ca)
            #expect {
                try StreamUploader(plain)
            } throws: { error in
                "\(error)" == "--cacert, --capath, --cert and --key are for https:// URLs: http://127.0.0.1:9/ is not one"
            }
            withExtendedLifetime((one, same)) {}
        }

        /// `GET url` on `session`: `STATUS BODY`, or nil when no answer came.
        private static func get(_ url: String, _ session: URLSession) async -> String? {
            await withCheckedContinuation { continuation in
                session.dataTask(with: URL(string: url)!) { data, response, _ in
                    guard let response = response as? HTTPURLResponse else { return continuation.resume(returning: nil) }
                    continuation.resume(returning: "\(response.statusCode) \(String(decoding: data ?? Data(), as: UTF8.self))")
                }.resume()
            }
        }
    }
}
