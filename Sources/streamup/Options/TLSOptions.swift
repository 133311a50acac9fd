/// curl's TLS options, which streamup cannot honour on Linux: refused with one line that says
/// what to do instead, rather than accepted and silently ignored. URLSession in
/// swift-corelibs-foundation verifies servers against the system's CA store only and cannot send
/// a client certificate: its libcurl glue sets no client key or certificate (DesignNotes, platform fact 8).
///
/// Thread safety: immutable values.
enum TLSOptions {
    static let trustStore =
        "add the CA to the system store instead: copy it to /usr/local/share/ca-certificates/NAME.crt (PEM, .crt) and run update-ca-certificates"

    static func table<Options>() -> [OptionSpec<Options>] {
        [
            .value(
                "--cacert", "--capath", valueName: "FILE", group: .receivers,
                help: "refused: add the CA to the system store (update-ca-certificates)"
            ) { _, _ throws(UsageError) in
                throw UsageError("--cacert/--capath: URLSession on Linux trusts only the system's CA store; \(trustStore)")
            },
            .value(
                "--cert", "--key", valueName: "FILE",
                group: .receivers, help: "refused: URLSession cannot send one; use a TLS proxy (stunnel)"
            ) { _, _ throws(UsageError) in
                throw UsageError(
                    "--cert/--key: URLSession on Linux cannot send a client certificate; reach the server through a local TLS proxy that holds it (stunnel, nginx)"
                )
            },
            OptionSpec(
                names: ["-k", "--insecure"], valueName: nil, group: .receivers,
                help: "refused: URLSession cannot skip certificate checks"
            ) { _, _ throws(UsageError) in
                throw UsageError("-k: URLSession on Linux cannot skip certificate checks; \(trustStore)")
            },
        ]
    }
}
