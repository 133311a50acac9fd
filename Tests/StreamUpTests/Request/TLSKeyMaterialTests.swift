import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// The PEM files `openssl` writes, taken apart into what Apple's Security framework imports
/// (`TLSChallenge`): the DER of each certificate, an RSA key as PKCS #1 and an EC key as
/// X9.63, from PKCS #8 and from the older PEM forms alike; each compared with what `openssl`
/// itself converts the same key to.
@Suite(.enabled(if: OptionalTool.openssl.isAvailable, Comment(rawValue: OptionalTool.openssl.skipReason)))
struct TLSKeyMaterialTests {
    @Test func keysAndCertificatesComeApartAsSecurityImportsThem() async throws {
        let scratch = try TemporaryDirectory()
        try await runShell(
            """
            set -e
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ec.key -out ec.crt -days 1 -subj /CN=a
            openssl ec -in ec.key -out ec-sec1.pem
            openssl ec -in ec.key -outform der -out ec-sec1.der
            openssl pkey -in ec.key -pubout -outform der -out ec-public.der
            openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa.key
            openssl rsa -in rsa.key -traditional -out rsa-pkcs1.pem
            openssl rsa -in rsa.key -traditional -outform der -out rsa-pkcs1.der
            openssl req -x509 -key rsa.key -out rsa.crt -days 1 -subj /CN=b
            openssl genpkey -algorithm ed25519 -out ed.key
            cat ec.crt rsa.crt > bundle.pem
            openssl x509 -in ec.crt -outform der -out ec.der
            openssl x509 -in rsa.crt -outform der -out rsa.der
            """, in: scratch.url)
        func file(_ name: String) throws -> Data { try Data(contentsOf: scratch.url.appendingPathComponent(name)) }

        // EC (P-256): 04 || X || Y from the public key, then D from SEC 1, whichever PEM form.
        let sec1 = try file("ec-sec1.der")
        let expected = try file("ec-public.der").suffix(65) + sec1[sec1.startIndex + 7..<sec1.startIndex + 39]
        #expect(TLSKeyMaterial.privateKey(in: try file("ec.key")) == .ec(Data(expected)))
        #expect(TLSKeyMaterial.privateKey(in: try file("ec-sec1.pem")) == .ec(Data(expected)))
        // RSA: PKCS #1, from PKCS #8 or as it is.
        #expect(TLSKeyMaterial.privateKey(in: try file("rsa.key")) == .rsa(try file("rsa-pkcs1.der")))
        #expect(TLSKeyMaterial.privateKey(in: try file("rsa-pkcs1.pem")) == .rsa(try file("rsa-pkcs1.der")))
        // A key of another kind is not made up.
        #expect(TLSKeyMaterial.privateKey(in: try file("ed.key")) == nil)
        #expect(TLSKeyMaterial.privateKey(in: try file("ec.crt")) == nil)
        // Certificates: each block's DER, in order.
        #expect(TLSKeyMaterial.certificates(in: try file("bundle.pem")) == [try file("ec.der"), try file("rsa.der")])
    }
}
