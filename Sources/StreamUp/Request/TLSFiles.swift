internal import CStreamUpCurl
import Foundation

/// The checks of an upload's TLS files (``UploadConfiguration/TLS``) before anything is sent,
/// each failure one line naming the option, the file and what to do: a file that cannot be read
/// or is not PEM, a CA file or directory without a certificate OpenSSL can read, an encrypted
/// key, a key that is not the certificate's, a client certificate out of date. The certificate
/// and key are read with the process's own libcrypto, the one libcurl reads them with at a
/// connection (`TLSFileCheck.c`), so its verdict is libcurl's; where the process has none (not
/// on Linux) only the PEM structure is checked here.
///
/// Thread safety: stateless; callable from any thread.
enum TLSFiles {
    /// The most a certificate or key file may hold (the hook reads at most this much too).
    static let maxBytes = 4 << 20

    /// Checks every file `tls` names, at `now`.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) naming the first problem.
    static func check(_ tls: UploadConfiguration.TLS, now: Date = Date()) throws(StreamUpError) {
        if tls.clientKey != nil, tls.clientCertificate == nil {
            throw invalid("--key names the key of a client certificate: add --cert FILE (the certificate the key belongs to)")
        }
        if let file = tls.caCertificates {
            let bytes = try read(file, option: "--cacert", what: "a PEM file of CA certificates")
            try requirePEM(bytes, file: file, option: "--cacert", labels: certificateLabels, what: "certificate")
            if bytes.withUnsafeBytes({ streamup_tls_count_certificates($0.baseAddress, $0.count) }) == 0 {
                throw invalid("--cacert \(file.path) holds no certificate OpenSSL can read: give a PEM file of CA certificates")
            }
        }
        if let directory = tls.caDirectory { try checkDirectory(directory) }
        guard let certificateFile = tls.clientCertificate else { return }
        let certificate = try read(certificateFile, option: "--cert", what: "the PEM client certificate")
        try requirePEM(certificate, file: certificateFile, option: "--cert", labels: certificateLabels, what: "certificate")
        let keyFile = tls.clientKey ?? certificateFile
        let keyOption = tls.clientKey == nil ? "--cert" : "--key"
        let key = tls.clientKey == nil ? certificate : try read(keyFile, option: "--key", what: "the PEM private key of --cert")
        if !contains(key, anyOf: keyLabels.map { "-----BEGIN \($0)-----" }) {
            if contains(key, anyOf: ["-----BEGIN ENCRYPTED PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED"]) {
                throw invalid(encrypted(keyFile, option: keyOption))
            }
            throw invalid(
                tls.clientKey == nil
                    ? "--cert \(certificateFile.path) holds no private key: give the certificate's key with --key FILE (PEM)"
                    : "--key \(keyFile.path) holds no PEM private key (no -----BEGIN PRIVATE KEY----- line): give the certificate's key, unencrypted")
        }
        if contains(key, anyOf: ["Proc-Type: 4,ENCRYPTED"]) { throw invalid(encrypted(keyFile, option: keyOption)) }
        try checkPair(certificate: certificate, certificateFile: certificateFile, key: key, keyFile: keyFile, keyOption: keyOption, now: now)
    }

    private static let certificateLabels = ["CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CERTIFICATE"]
    private static let keyLabels = ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY"]

    private static func invalid(_ line: String) -> StreamUpError {
        StreamUpError(.invalidConfiguration, line)
    }

    private static func encrypted(_ file: URL, option: String) -> String {
        "\(option) \(file.path) holds an encrypted key: streamup takes an unencrypted one (openssl pkey -in \(file.path) -out KEY.pem writes it; keep it private)"
    }

    /// The file's bytes, or the line that says why it cannot be read.
    private static func read(_ file: URL, option: String, what: String) throws(StreamUpError) -> Data {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw invalid("\(option) \(file.path) is a directory: give \(what)")
        }
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: file)
        } catch {
            throw invalid("\(option) \(file.path) cannot be read (\(reason(of: error))): give \(what) that streamup may read")
        }
        defer { try? handle.close() }
        do {
            let bytes = try handle.read(upToCount: maxBytes + 1) ?? Data()
            if bytes.count > maxBytes { throw invalid("\(option) \(file.path) holds more than \(maxBytes >> 20) MiB: give \(what)") }
            return bytes
        } catch let error as StreamUpError {
            throw error
        } catch {
            throw invalid("\(option) \(file.path) cannot be read (\(reason(of: error))): give \(what) that streamup may read")
        }
    }

    /// The system's words for a failed open or read: "No such file or directory".
    private static func reason(of error: Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(underlying.code))) }
        if (error as NSError).domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32((error as NSError).code))) }
        switch (error as NSError).code {
        case NSFileReadNoSuchFileError: return String(cString: strerror(ENOENT))
        case NSFileReadNoPermissionError: return String(cString: strerror(EACCES))
        default: return "error \((error as NSError).code)"
        }
    }

    private static func requirePEM(_ bytes: Data, file: URL, option: String, labels: [String], what: String) throws(StreamUpError) {
        guard !contains(bytes, anyOf: labels.map { "-----BEGIN \($0)-----" }) else { return }
        // DER starts with a SEQUENCE (0x30); PEM is its Base64 between BEGIN and END lines.
        let hint =
            bytes.first == 0x30
            ? "it looks like DER: convert it with openssl x509 -inform der -in \(file.path) -out CERT.pem"
            : "no -----BEGIN CERTIFICATE----- line"
        throw invalid("\(option) \(file.path) holds no PEM \(what) (\(hint))")
    }

    private static func contains(_ bytes: Data, anyOf markers: [String]) -> Bool {
        markers.contains { bytes.range(of: Data($0.utf8)) != nil }
    }

    /// A CA directory must hold certificates under the names OpenSSL looks them up by
    /// (`HASH.N`, made by `openssl rehash`); plain `ca.crt` files there are never found.
    private static func checkDirectory(_ directory: URL) throws(StreamUpError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            throw invalid("--capath \(directory.path) does not exist: give a directory of CA certificates (openssl rehash DIR names them)")
        }
        guard isDirectory.boolValue else {
            throw invalid("--capath \(directory.path) is a file: give it with --cacert, or a directory of CA certificates with --capath")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw invalid("--capath \(directory.path) cannot be read (\(reason(of: error))): give a directory streamup may read")
        }
        let hashed = names.contains { name in
            let parts = name.split(separator: ".")
            return parts.count == 2 && parts[0].count == 8 && parts[0].allSatisfy(\.isHexDigit) && parts[1].allSatisfy(\.isNumber)
        }
        if !hashed {
            throw invalid(
                "--capath \(directory.path) holds no certificate under OpenSSL's hashed names (HASH.0): run openssl rehash \(directory.path), or give one PEM file with --cacert"
            )
        }
    }

    /// The certificate and key read as libcurl reads them, belonging together, in date.
    private static func checkPair(
        certificate: Data, certificateFile: URL, key: Data, keyFile: URL, keyOption: String, now: Date
    ) throws(StreamUpError) {
        var validFrom: Int64 = 0
        var validUntil: Int64 = 0
        var detail = [CChar](repeating: 0, count: 256)
        let outcome = certificate.withUnsafeBytes { certificateBytes in
            key.withUnsafeBytes { keyBytes in
                streamup_tls_check_identity(
                    certificateBytes.baseAddress, certificateBytes.count, keyBytes.baseAddress, keyBytes.count, &validFrom, &validUntil, &detail,
                    detail.count)
            }
        }
        let reason = String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let because = reason.isEmpty ? "" : " (\(reason))"
        switch outcome {
        case streamup_tls_identity_no_certificate:
            throw invalid("--cert \(certificateFile.path) holds no certificate OpenSSL can read\(because): give the PEM client certificate")
        case streamup_tls_identity_no_key:
            throw invalid(
                "\(keyOption) \(keyFile.path) holds no private key OpenSSL can read without a pass phrase\(because): give the certificate's key, unencrypted")
        case streamup_tls_identity_mismatch:
            throw invalid(
                "the key in \(keyOption) \(keyFile.path) does not belong to the certificate in --cert \(certificateFile.path): give the key the certificate was made for"
            )
        default:
            break
        }
        guard outcome == streamup_tls_identity_ok else { return }
        let from = Date(timeIntervalSince1970: TimeInterval(validFrom))
        let until = Date(timeIntervalSince1970: TimeInterval(validUntil))
        if validUntil != 0, until < now {
            throw invalid(
                "the certificate in --cert \(certificateFile.path) expired at \(until.formatted(.iso8601)): servers refuse it; give a current one"
            )
        }
        if validFrom != 0, from > now {
            throw invalid("the certificate in --cert \(certificateFile.path) is valid only from \(from.formatted(.iso8601)): check this machine's clock")
        }
    }
}
