#if canImport(Security)
import Foundation
import Security
import StreamUpSystem

/// ``UploadConfiguration/TLS`` on Apple platforms, where URLSession asks its delegate: the
/// server-trust challenge is evaluated with the CA certificates given as anchors, beside the
/// system's (as curl on Debian keeps the system's CA directory), and the client-certificate
/// challenge is answered with the identity of the certificate and key given. The files are
/// read at each challenge, that is at each new connection, so renewed files are used without a
/// restart. Written for Apple platforms and not built there yet (CONTRIBUTING.md, "Platforms").
///
/// Security imports a private key only into a keychain to make an identity of it (there is no
/// identity of a key and a certificate in memory alone, short of PKCS #12): the pair goes into
/// the data protection keychain under a label naming the certificate file, replaced when the
/// file changes, and deleted by ``forget(_:)`` when the upload ends.
///
/// Thread safety: `identities` is guarded by its `Mutex`; the rest is stateless.
enum TLSChallenge {
    /// The identity made for each certificate file, and the certificate's DER it was made of.
    private static let identities = Mutex<[String: (der: Data, identity: SecIdentity, chain: [SecCertificate])]>([:])

    /// How to answer `challenge` with `tls`, or nil when it is not a TLS challenge (HTTP
    /// authentication, which the task's delegate declines).
    static func answer(
        _ challenge: URLAuthenticationChallenge, tls: UploadConfiguration.TLS?
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?)? {
        switch challenge.protectionSpace.authenticationMethod {
        case NSURLAuthenticationMethodServerTrust:
            guard let trust = challenge.protectionSpace.serverTrust, let tls, case let anchors = anchors(tls), !anchors.isEmpty else {
                return (.performDefaultHandling, nil)
            }
            SecTrustSetAnchorCertificates(trust, anchors as CFArray)
            SecTrustSetAnchorCertificatesOnly(trust, false)
            var error: CFError?
            // Not trusted with the anchors: the system's own evaluation fails the task with its
            // certificate error (TransportFailure names --cacert), never a cancellation.
            guard SecTrustEvaluateWithError(trust, &error) else { return (.performDefaultHandling, nil) }
            return (.useCredential, URLCredential(trust: trust))
        case NSURLAuthenticationMethodClientCertificate:
            guard let tls, let client = identity(tls) else { return (.performDefaultHandling, nil) }
            return (.useCredential, URLCredential(identity: client.identity, certificates: client.chain, persistence: .forSession))
        default:
            return nil
        }
    }

    /// The CA certificates of `tls`'s file and directory.
    private static func anchors(_ tls: UploadConfiguration.TLS) -> [SecCertificate] {
        var pems: [Data] = []
        if let file = tls.caCertificates, let pem = try? Data(contentsOf: file) { pems.append(pem) }
        if let directory = tls.caDirectory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) {
            for name in names.sorted() {
                if let pem = try? Data(contentsOf: directory.appendingPathComponent(name)) { pems.append(pem) }
            }
        }
        return pems.flatMap(TLSKeyMaterial.certificates(in:)).compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
    }

    /// The identity of `tls`'s client certificate and key, made anew when the certificate changed.
    private static func identity(_ tls: UploadConfiguration.TLS) -> (identity: SecIdentity, chain: [SecCertificate])? {
        guard let certificateFile = tls.clientCertificate, let pem = try? Data(contentsOf: certificateFile) else { return nil }
        let ders = TLSKeyMaterial.certificates(in: pem)
        guard let leaf = ders.first else { return nil }
        let label = "streamup " + certificateFile.path
        if let known = identities.withLock({ $0[label] }), known.der == leaf { return (known.identity, known.chain) }
        let keyPEM = tls.clientKey.flatMap { try? Data(contentsOf: $0) } ?? pem
        guard let certificate = SecCertificateCreateWithData(nil, leaf as CFData), let key = privateKey(keyPEM) else { return nil }
        remove(label: label)
        let items: [[CFString: Any]] = [
            [kSecClass: kSecClassKey, kSecValueRef: key, kSecAttrLabel: label, kSecUseDataProtectionKeychain: true],
            [kSecClass: kSecClassCertificate, kSecValueRef: certificate, kSecAttrLabel: label, kSecUseDataProtectionKeychain: true],
        ]
        for item in items {
            let status = SecItemAdd(item as CFDictionary, nil)
            guard status == errSecSuccess || status == errSecDuplicateItem else { return nil }
        }
        let query: [CFString: Any] = [
            kSecClass: kSecClassIdentity, kSecAttrLabel: label, kSecReturnRef: true, kSecUseDataProtectionKeychain: true,
        ]
        var found: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &found) == errSecSuccess, let found, CFGetTypeID(found) == SecIdentityGetTypeID() else {
            return nil
        }
        let identity = unsafeDowncast(found, to: SecIdentity.self)
        let chain = ders.dropFirst().compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
        identities.withLock { $0[label] = (leaf, identity, chain) }
        return (identity, chain)
    }

    private static func privateKey(_ pem: Data) -> SecKey? {
        let attributes: [CFString: Any]
        let bytes: Data
        switch TLSKeyMaterial.privateKey(in: pem) {
        case .rsa(let pkcs1)?:
            attributes = [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPrivate]
            bytes = pkcs1
        case .ec(let x963)?:
            attributes = [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPrivate]
            bytes = x963
        case nil:
            return nil
        }
        return SecKeyCreateWithData(bytes as CFData, attributes as CFDictionary, nil)
    }

    private static func remove(label: String) {
        for itemClass in [kSecClassKey, kSecClassCertificate] {
            let query: [CFString: Any] = [kSecClass: itemClass, kSecAttrLabel: label, kSecUseDataProtectionKeychain: true]
            SecItemDelete(query as CFDictionary)
        }
    }

    /// Deletes the keychain items made for `tls`'s client certificate.
    static func forget(_ tls: UploadConfiguration.TLS) {
        guard let certificateFile = tls.clientCertificate else { return }
        let label = "streamup " + certificateFile.path
        identities.withLock { _ = $0.removeValue(forKey: label) }
        remove(label: label)
    }
}
#endif
