import Foundation

extension UploadConfiguration {
    /// curl's TLS options for an upload's endpoints: CA certificates to verify the server with
    /// (`--cacert`, `--capath`) and a client certificate with its key (`--cert`, `--key`), PEM
    /// files all. Set ``UploadConfiguration/tls`` to use them; nil (the default) verifies servers
    /// against the system's CA store and sends no client certificate. Nothing here turns
    /// verification off.
    ///
    /// The files are read and checked when the uploader is made (a file that cannot be read, is
    /// not PEM, holds an encrypted key or a key that does not belong to its certificate, or a
    /// certificate out of date, throws ``StreamUpError/Code/invalidConfiguration`` naming it),
    /// and again whenever they change on disk: a certificate rotated in place (cert-manager, a
    /// Vault agent) is used from the next connection on, without a restart.
    ///
    /// On Linux URLSession has no API for any of this; StreamUp gives the files to the libcurl
    /// under it, for every transfer of the process to an upload's endpoint (scheme, host and
    /// port), the app's own requests to it too (Library.md, "TLS files on Linux", says what an
    /// app must know). On Apple platforms the session's delegate answers the server-trust and
    /// client-certificate challenges with them.
    ///
    /// Thread safety: a value type.
    public struct TLS: Sendable, Equatable {
        /// A PEM file of CA certificates the server's certificate must chain to, as curl's
        /// `--cacert`: it takes the place of the system's CA file (a CA directory libcurl was
        /// built with, Debian's `/etc/ssl/certs`, is still searched, as by curl).
        public var caCertificates: URL?
        /// A directory of PEM CA certificates under OpenSSL's hashed names (`openssl rehash
        /// DIR`), as curl's `--capath`.
        public var caDirectory: URL?
        /// The PEM client certificate to present (the certificate first, then any
        /// intermediates), as curl's `--cert`. Its key is in the same file unless ``clientKey``
        /// names another.
        public var clientCertificate: URL?
        /// The unencrypted PEM private key of ``clientCertificate``, as curl's `--key`.
        public var clientKey: URL?

        /// Files for a private CA, a client certificate, or both.
        public init(caCertificates: URL? = nil, caDirectory: URL? = nil, clientCertificate: URL? = nil, clientKey: URL? = nil) {
            self.caCertificates = caCertificates
            self.caDirectory = caDirectory
            self.clientCertificate = clientCertificate
            self.clientKey = clientKey
        }

        /// Checks the files as an uploader does when it is made (`run --check` asks without one).
        /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) naming the first problem.
        package func check() throws(StreamUpError) {
            try TLSFiles.check(self)
        }
    }
}
