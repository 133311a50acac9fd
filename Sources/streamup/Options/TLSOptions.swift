import Foundation
import StreamUp

/// curl's TLS options, with curl's names: `--cacert FILE` and `--capath DIR` (CA certificates to
/// verify the server with), `--cert FILE` and `--key FILE` (a client certificate and its key),
/// PEM files all, for every command and in pipelines files. The parser only records them; the
/// library reads and checks the files before anything is sent (``UploadConfiguration/TLS``).
/// `-k`/`--insecure` is refused: nothing turns verification off.
///
/// Thread safety: a value type.
struct TLSOptions: Sendable, Equatable {
    var caCertificates: String?
    var caDirectory: String?
    var certificate: String?
    var key: String?

    /// Three entries in `--help`: `--capath` and `--key` come first, unlisted (an empty help),
    /// so that the parser, which takes the first entry naming an option, gives them their own
    /// meaning, while the entries of `--cacert` and `--cert` list them beside.
    static let table: [OptionSpec<TLSOptions>] = [
        .value("--capath", valueName: "DIR", group: .receivers, help: "") { options, value throws(UsageError) in
            options.caDirectory = try path(value, option: "--capath", given: options.caDirectory)
        },
        .value("--key", valueName: "FILE", group: .receivers, help: "") { options, value throws(UsageError) in
            options.key = try path(value, option: "--key", given: options.key)
        },
        .value("--cacert", "--capath", valueName: "FILE", group: .receivers, help: "trust the CA certificates in FILE (PEM), or in DIR (openssl rehash)") {
            options, value throws(UsageError) in
            options.caCertificates = try path(value, option: "--cacert", given: options.caCertificates)
        },
        .value("--cert", "--key", valueName: "FILE", group: .receivers, help: "present a client certificate and its key (PEM); read again if changed") {
            options, value throws(UsageError) in
            options.certificate = try path(value, option: "--cert", given: options.certificate)
        },
        OptionSpec(names: ["-k", "--insecure"], valueName: nil, group: .receivers, help: "refused: certificates are always verified (use --cacert)") {
            _, _ throws(UsageError) in
            throw UsageError("-k: streamup always verifies the server's certificate; give the CA that issued it with --cacert FILE (PEM)")
        },
    ]

    private static func path(_ value: String, option: String, given: String?) throws(UsageError) -> String {
        guard given == nil else { throw UsageError("\(option): given twice") }
        guard !value.isEmpty else { throw UsageError("\(option): the file name is empty") }
        return value
    }

    /// Checks the options together, after parsing.
    func validate() throws(UsageError) {
        if key != nil, certificate == nil {
            throw UsageError("--key names the key of a client certificate: add --cert FILE (the certificate the key belongs to)")
        }
    }

    /// The library's setting, or nil when no option was given.
    var configuration: UploadConfiguration.TLS? {
        let tls = UploadConfiguration.TLS(
            caCertificates: caCertificates.map(Self.fileURL), caDirectory: caDirectory.map(Self.fileURL),
            clientCertificate: certificate.map(Self.fileURL), clientKey: key.map(Self.fileURL))
        return tls == UploadConfiguration.TLS() ? nil : tls
    }

    /// A path as given, relative to the working directory at start (a pipeline reloaded later
    /// reads the same file).
    private static func fileURL(_ path: String) -> URL {
        URL(fileURLWithPath: path).standardizedFileURL
    }
}
