internal import CStreamUpCurl
import Foundation
import StreamUpSystem

/// The endpoints of this process's uploads that have TLS files (``UploadConfiguration/TLS``),
/// by scheme, host and port: what the libcurl hook gives each transfer to them on Linux
/// (`TLSHook.c`, registered there too), and what a failure's line names.
///
/// One set of files per endpoint: the hook sees only a transfer's URL, so two uploads in one
/// process that send to the same endpoint must give it the same files (or none); the second
/// with other files is refused when it starts.
///
/// Thread safety: `table` is guarded by its `Mutex`; the hook's registry by its own lock (in C).
enum TLSEndpoints {
    /// The files each registered endpoint ("scheme://host:port", as the hook spells it) has, and
    /// how many uploads registered them.
    fileprivate static let table = Mutex<[String: (tls: UploadConfiguration.TLS, uploads: Int)]>([:])

    /// The uploads' registration of their endpoints; ``release()`` (or its end) takes it back.
    ///
    /// Thread safety: `released` is guarded by its `Mutex`; the rest is immutable.
    final class Registration: Sendable {
        private let origins: [String]
        private let tls: UploadConfiguration.TLS
        private let released = Mutex(false)

        fileprivate init(origins: [String], tls: UploadConfiguration.TLS) {
            self.origins = origins
            self.tls = tls
        }

        /// Takes the files back from the endpoints (once; later calls do nothing).
        func release() {
            let first = released.withLock { released in
                defer { released = true }
                return !released
            }
            guard first else { return }
            for origin in origins { TLSEndpoints.unregister(origin) }
            #if canImport(Security)
            // The keychain items made for the client certificate (TLSChallenge), once no
            // upload uses it any more.
            let inUse = TLSEndpoints.table.withLock { $0.values.contains { $0.tls.clientCertificate == tls.clientCertificate } }
            if !inUse { TLSChallenge.forget(tls) }
            #endif
        }

        deinit { release() }
    }

    /// The endpoint of `url` as the hook matches it ("https://logs.example:443"), or nil.
    static func origin(of url: URL) -> String? {
        let spelled = SessionURL.forURLSession(url) ?? url
        var buffer = [CChar](repeating: 0, count: 512)
        guard streamup_tls_origin(spelled.absoluteString, &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Gives `tls`'s files to every transfer to the `https` ones of `urls` until the
    /// registration is released.
    /// - Throws: ``StreamUpError`` (`.invalidConfiguration`) when none of `urls` is `https`, when
    ///   this program's URLSession does not go through the hook (Linux), or when an endpoint has
    ///   other files in this process already.
    static func register(_ tls: UploadConfiguration.TLS, for urls: [URL]) throws(StreamUpError) -> Registration {
        let secure = urls.filter { $0.scheme?.lowercased() == "https" }
        guard !secure.isEmpty else {
            throw StreamUpError(
                .invalidConfiguration, "--cacert, --capath, --cert and --key are for https:// URLs: \(urls.first?.absoluteString ?? "no URL") is not one")
        }
        #if os(Linux)
        guard streamup_tls_hook_in_effect() != 0 else {
            throw StreamUpError(
                .invalidConfiguration,
                "TLS files cannot reach libcurl in this program: its executable must export curl_multi_add_handle and curl_easy_cleanup (-Xlinker --export-dynamic-symbol=NAME; Library.md) or be built with --static-swift-stdlib"
            )
        }
        #endif
        var origins: [String] = []
        for url in secure {
            guard let origin = origin(of: url), !origins.contains(origin) else { continue }
            let added = table.withLock { table -> Bool in
                let uploads = table[origin]
                guard uploads == nil || uploads?.tls == tls else { return false }
                table[origin] = (tls, (uploads?.uploads ?? 0) + 1)
                return true
            }
            guard added else {
                for origin in origins { unregister(origin) }
                throw StreamUpError(
                    .invalidConfiguration,
                    "\(origin) has other TLS files in another upload of this process, and an endpoint (scheme, host and port) has one set of --cacert, --capath, --cert and --key: give both the same files"
                )
            }
            #if os(Linux)
            _ = streamup_tls_register(origin, tls.caCertificates?.path, tls.caDirectory?.path, tls.clientCertificate?.path, tls.clientKey?.path)
            #endif
            origins.append(origin)
        }
        return Registration(origins: origins, tls: tls)
    }

    private static func unregister(_ origin: String) {
        table.withLock { table in
            guard let existing = table[origin] else { return }
            table[origin] = existing.uploads > 1 ? (existing.tls, existing.uploads - 1) : nil
        }
        #if os(Linux)
        streamup_tls_unregister(origin)
        #endif
    }

    /// The files the endpoint of `url` has in this process, if any.
    static func files(for url: URL?) -> UploadConfiguration.TLS? {
        guard let url, let origin = origin(of: url) else { return nil }
        return table.withLock { $0[origin]?.tls }
    }

    /// Why files that changed on disk for the endpoint of `url` were not used, if they were not
    /// (a certificate without its key yet, a file that cannot be read); nil otherwise.
    static func rotationProblem(for url: URL?) -> String? {
        guard let url, let origin = origin(of: url) else { return nil }
        var buffer = [CChar](repeating: 0, count: 512)
        guard streamup_tls_problem(origin, &buffer, buffer.count) != 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
