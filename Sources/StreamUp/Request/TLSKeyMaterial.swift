import Foundation

/// PEM certificates and private keys taken apart into the forms Apple's Security framework
/// imports: each certificate's DER (`SecCertificateCreateWithData`), and a private key as
/// PKCS #1 (RSA) or ANSI X9.63 (EC: `04 || X || Y || D`, `SecKeyCreateWithData`) from the
/// PKCS #8, PKCS #1 or SEC 1 PEM that `openssl` writes. Only what those forms need is read
/// from the DER: a key of another kind (Ed25519), or an EC key without its public part, is
/// nil. Platform-neutral, so that it is tested where the rest of the TLS code is (Linux);
/// used by `TLSChallenge` on Apple platforms.
///
/// Thread safety: stateless; callable from any thread.
enum TLSKeyMaterial {
    /// A private key as Security imports it.
    ///
    /// Thread safety: a value type.
    enum PrivateKey: Equatable {
        /// An RSA key: its PKCS #1 `RSAPrivateKey` DER.
        case rsa(Data)
        /// An EC key: `04 || X || Y || D`, the field size each.
        case ec(Data)
    }

    /// The PEM blocks of `pem`, in order: their label (`CERTIFICATE`) and their bytes.
    static func blocks(_ pem: Data) -> [(label: String, der: Data)] {
        let text = String(decoding: pem, as: UTF8.self)
        var blocks: [(String, Data)] = []
        var label: String?
        var base64 = ""
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                base64 = ""
            } else if line.hasPrefix("-----END "), let open = label {
                if let der = Data(base64Encoded: base64) { blocks.append((open, der)) }
                label = nil
            } else if label != nil, !line.contains(":") {
                base64 += line
            }
        }
        return blocks
    }

    /// The DER of every certificate in `pem`.
    static func certificates(in pem: Data) -> [Data] {
        blocks(pem).filter { $0.label == "CERTIFICATE" || $0.label == "TRUSTED CERTIFICATE" }.map(\.der)
    }

    /// The first private key in `pem`, as Security imports it.
    static func privateKey(in pem: Data) -> PrivateKey? {
        for block in blocks(pem) {
            switch block.label {
            case "RSA PRIVATE KEY": return .rsa(block.der)
            case "EC PRIVATE KEY": return ecKey(sec1: block.der)
            case "PRIVATE KEY": return unwrap(pkcs8: block.der)
            default: continue
            }
        }
        return nil
    }

    private static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]  // 1.2.840.113549.1.1.1
    private static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]  // 1.2.840.10045.2.1

    /// PKCS #8 `PrivateKeyInfo`: SEQUENCE { INTEGER version, SEQUENCE { OID algorithm, … },
    /// OCTET STRING key }.
    private static func unwrap(pkcs8: Data) -> PrivateKey? {
        guard let info = DER.first(pkcs8, tag: 0x30) else { return nil }
        var fields = DER(info)
        guard fields.element(tag: 0x02) != nil, let algorithm = fields.element(tag: 0x30)?.contents,
            let oid = DER.first(algorithm, tag: 0x06), let key = fields.element(tag: 0x04)?.contents
        else { return nil }
        if Array(oid) == rsaEncryption { return .rsa(key) }
        if Array(oid) == ecPublicKey { return ecKey(sec1: key) }
        return nil
    }

    /// SEC 1 `ECPrivateKey`: SEQUENCE { INTEGER 1, OCTET STRING d, [0] parameters OPTIONAL,
    /// [1] BIT STRING publicKey OPTIONAL }.
    private static func ecKey(sec1: Data) -> PrivateKey? {
        guard let body = DER.first(sec1, tag: 0x30) else { return nil }
        var fields = DER(body)
        guard fields.element(tag: 0x02) != nil, let secret = fields.element(tag: 0x04)?.contents else { return nil }
        var publicKey: Data?
        while let field = fields.element() {
            if field.tag == 0xA1, let bits = DER.first(field.contents, tag: 0x03), bits.first == 0 {
                publicKey = bits.dropFirst()
            }
        }
        guard let publicKey, publicKey.first == 0x04, publicKey.count % 2 == 1 else { return nil }
        let size = (publicKey.count - 1) / 2
        guard secret.count <= size else { return nil }
        return .ec(publicKey + Data(repeating: 0, count: size - secret.count) + secret)
    }
}

/// A reader of DER elements one after another, for the few structures ``TLSKeyMaterial`` reads.
///
/// Thread safety: a value type.
private struct DER {
    private var bytes: Data

    init(_ bytes: Data) {
        self.bytes = Data(bytes)
    }

    /// The next element (tag, contents), or nil at the end or on a malformed length.
    mutating func element() -> (tag: UInt8, contents: Data)? {
        guard bytes.count >= 2 else { return nil }
        let start = bytes.startIndex
        let tag = bytes[start]
        var length = Int(bytes[start + 1])
        var header = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count > 0, count <= 4, bytes.count >= 2 + count else { return nil }
            length = bytes[(start + 2)..<(start + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
            header += count
        }
        guard bytes.count >= header + length else { return nil }
        let contents = bytes[(start + header)..<(start + header + length)]
        bytes = bytes[(start + header + length)...]
        return (tag, Data(contents))
    }

    /// The contents of the first element of `bytes` if it has `tag`.
    static func first(_ bytes: Data, tag: UInt8) -> Data? {
        var reader = DER(bytes)
        return reader.element(tag: tag)?.contents
    }

    /// The next element if it has `tag`.
    mutating func element(tag: UInt8) -> (tag: UInt8, contents: Data)? {
        guard let next = element(), next.tag == tag else { return nil }
        return next
    }
}
