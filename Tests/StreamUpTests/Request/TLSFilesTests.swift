import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The TLS files (`--cacert`, `--capath`, `--cert`, `--key`) are checked before anything is
/// sent, each problem one line naming the option, the file and what to do; the certificate and
/// key as libcurl's OpenSSL reads them. Made by `openssl` for the test; dates checked against a
/// clock the test sets.
@Suite(.enabled(if: OptionalTool.openssl.isAvailable, Comment(rawValue: OptionalTool.openssl.skipReason)))
struct TLSFilesTests {
    /// One set of files, and the line its check must give (nil: it passes).
    struct Case {
        let name: String
        let tls: UploadConfiguration.TLS
        let line: String?
        var now = Date()
    }

    /// Every problem a user can hand streamup, in one test: the certificates are made once.
    @Test func everyBadFileIsOneLineNamingItAndGoodOnesPass() async throws {
        let certificates = try await TestCertificates([.client, .secondClient])
        let directory = certificates.directory
        func file(_ name: String) -> URL { directory.appendingPathComponent(name) }
        let ca = URL(fileURLWithPath: certificates.caCertificate)
        let (certificatePath, keyPath) = certificates.files(.client)
        let certificate = URL(fileURLWithPath: certificatePath)
        let key = URL(fileURLWithPath: keyPath)
        let otherKey = URL(fileURLWithPath: certificates.files(.secondClient).key)
        // Given: a DER copy of the CA, a file that says PEM but is not, a certificate with its
        // key in one file, an encrypted key, and a directory of certificates not named by hash.
        try await runShell(
            """
            set -e
            openssl x509 -in ca.crt -outform der -out ca.der
            printf -- '-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydGlmaWNhdGU=\\n-----END CERTIFICATE-----\\n' > garbage.pem
            cat client.crt client.key > both.pem
            openssl pkey -in client.key -aes256 -passout pass:secret -out encrypted.key
            mkdir plain && cp ca.crt plain/ca.crt
            mkdir hashed && cp ca.crt hashed/ && openssl rehash hashed
            """, in: directory)
        let cases = [
            Case(
                name: "missing CA file", tls: .init(caCertificates: file("missing.pem")),
                line:
                    "--cacert \(file("missing.pem").path) cannot be read (No such file or directory): give a PEM file of CA certificates that streamup may read"
            ),
            Case(
                name: "a directory for a file", tls: .init(caCertificates: file("plain")),
                line: "--cacert \(file("plain").path) is a directory: give a PEM file of CA certificates"),
            Case(
                name: "DER", tls: .init(caCertificates: file("ca.der")),
                line:
                    "--cacert \(file("ca.der").path) holds no PEM certificate (it looks like DER: convert it with openssl x509 -inform der -in \(file("ca.der").path) -out CERT.pem)"
            ),
            Case(
                name: "PEM lines around no certificate", tls: .init(caCertificates: file("garbage.pem")),
                line: "--cacert \(file("garbage.pem").path) holds no certificate OpenSSL can read: give a PEM file of CA certificates"),
            Case(
                name: "a key for a CA", tls: .init(caCertificates: key),
                line: "--cacert \(key.path) holds no PEM certificate (no -----BEGIN CERTIFICATE----- line)"),
            Case(
                name: "CA directory without hashed names", tls: .init(caDirectory: file("plain")),
                line:
                    "--capath \(file("plain").path) holds no certificate under OpenSSL's hashed names (HASH.0): run openssl rehash \(file("plain").path), or give one PEM file with --cacert"
            ),
            Case(name: "CA directory after openssl rehash", tls: .init(caDirectory: file("hashed")), line: nil),
            Case(
                name: "a key without its certificate", tls: .init(clientKey: key),
                line: "--key names the key of a client certificate: add --cert FILE (the certificate the key belongs to)"),
            Case(
                name: "a certificate without a key", tls: .init(clientCertificate: certificate),
                line: "--cert \(certificate.path) holds no private key: give the certificate's key with --key FILE (PEM)"),
            Case(name: "a certificate with its key in one file", tls: .init(clientCertificate: file("both.pem")), line: nil),
            Case(
                name: "an encrypted key", tls: .init(clientCertificate: certificate, clientKey: file("encrypted.key")),
                line:
                    "--key \(file("encrypted.key").path) holds an encrypted key: streamup takes an unencrypted one (openssl pkey -in \(file("encrypted.key").path) -out KEY.pem writes it; keep it private)"
            ),
            Case(
                name: "another certificate's key", tls: .init(clientCertificate: certificate, clientKey: otherKey),
                line:
                    "the key in --key \(otherKey.path) does not belong to the certificate in --cert \(certificate.path): give the key the certificate was made for"
            ),
            Case(name: "a CA, a certificate and its key", tls: .init(caCertificates: ca, clientCertificate: certificate, clientKey: key), line: nil),
        ]
        for check in cases {
            #expect(Self.line(check.tls, now: check.now) == check.line, "\(check.name)")
        }
        // A certificate out of date: expired at its end, or not valid yet at its start (the
        // clock set past it or before it).
        let expired = try #require(Self.line(.init(clientCertificate: certificate, clientKey: key), now: Date(timeIntervalSinceNow: 3 * 86_400)))
        #expect(
            expired.hasPrefix("the certificate in --cert \(certificate.path) expired at 20") && expired.hasSuffix("Z: servers refuse it; give a current one"))
        let early = try #require(Self.line(.init(clientCertificate: certificate, clientKey: key), now: Date(timeIntervalSinceNow: -86_400)))
        #expect(early.hasPrefix("the certificate in --cert \(certificate.path) is valid only from 20") && early.hasSuffix("Z: check this machine's clock"))
        // An uploader with a bad file is refused when it is made, before anything is sent.
        var configuration = UploadConfiguration(url: URL(string: "https://127.0.0.1:9/")!)
        configuration.tls = .init(clientCertificate: certificate, clientKey: otherKey)
        #expect(throws: StreamUpError.self) { _ = try StreamUploader(configuration) }
    }

    private static func line(_ tls: UploadConfiguration.TLS, now: Date) -> String? {
        do {
            try TLSFiles.check(tls, now: now)
            return nil
        } catch {
            #expect(error.code == .invalidConfiguration)
            return error.description
        }
    }
}
