// swift-tools-version:6.0
import PackageDescription

// The libcurl functions CStreamUpCurl defines (hooks that call the real ones). A static build
// (`--static-swift-stdlib`, README's install) binds FoundationNetworking's calls to them when it
// links; a build that loads Foundation as shared libraries (debug builds, `swift run`, the tests)
// must export them from the executable for the dynamic linker to find them first. Root-package
// targets only: a package that depends on StreamUp cannot carry unsafe flags (Library.md says
// what an app does instead).
let curlHooks = ["curl_url", "curl_url_cleanup", "curl_free", "curl_multi_add_handle", "curl_easy_cleanup"]
let exportsCurlHooks: [LinkerSetting] = [
    .unsafeFlags(curlHooks.flatMap { ["-Xlinker", "--export-dynamic-symbol=\($0)"] }, .when(platforms: [.linux]))
]

let package = Package(
    name: "streamup",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "StreamUp", targets: ["StreamUp"]),
        .library(name: "StreamUpTail", targets: ["StreamUpTail"]),
        .library(name: "StreamUpSink", targets: ["StreamUpSink"]),
        .executable(name: "streamup", targets: ["streamup"]),
    ],
    targets: [
        // The system zlib (gzip bodies, spool checksums), from Debian's zlib1g-dev.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The POSIX pieces the library, the sink and the tools share: the system-call funnel,
        // the wake pipe, atomic files, inotify, file status, the package's Mutex.
        // Package-internal: not a product.
        .target(name: "StreamUpSystem"),
        // The system calls Swift cannot import as C declares them (prctl is variadic), behind a
        // plain C function each; system headers only, Linux only (empty elsewhere). Used by the
        // command-line tool; package-internal, not a product.
        .target(name: "CStreamUpSystem"),
        // Hooks into the system libcurl under FoundationNetworking (Linux only, empty elsewhere):
        // mends a URL handle corelibs releases with curl_free on every request, and gives the
        // transfers to an upload's endpoints its TLS files (curl_multi_add_handle). No libcurl
        // or OpenSSL headers: their few declarations are written out. Package-internal.
        .target(name: "CStreamUpCurl"),
        // The HTTP/1.1 wire pieces, one home each (package-internal, not a product): request
        // parser and chunked decoding, RFC 9651 items, resumable-upload field names, JSON
        // string escaping, Duration as seconds. No Foundation.
        .target(name: "StreamUpHTTP"),
        // The portable core: the uploader and its one buffer, delivery (acknowledged segments or
        // one live request), spool, producers, heartbeat, telemetry emitter, receiver presets,
        // records. Foundation, zlib and the two above only; written to build on Apple platforms
        // too (Linux-only calls sit behind `#if`).
        .target(name: "StreamUp", dependencies: ["CZlib", "CStreamUpCurl", "StreamUpSystem", "StreamUpHTTP"]),
        // The file tailer (`FileTailer`: globs, rotation, copytruncate, many files). Linux only:
        // it finds and watches files with inotify. Uses the core's records through `package` access.
        .target(name: "StreamUpTail", dependencies: ["StreamUp", "StreamUpSystem"]),
        // The systemd journal as a producer (`JournalProducer`: journalctl's export output,
        // entries as records, positions per sequence-number id). Package-internal, not a product.
        .target(name: "StreamUpJournal", dependencies: ["StreamUp", "StreamUpSystem"]),
        // The local HTTP/1.1 sink: POSIX sockets, no URLSession.
        .target(name: "StreamUpSink", dependencies: ["StreamUpSystem", "StreamUpHTTP"]),
        // The command-line tool: argv -> options -> calls into the libraries.
        .executableTarget(
            name: "streamup",
            dependencies: ["StreamUp", "StreamUpTail", "StreamUpJournal", "StreamUpSink", "StreamUpSystem", "StreamUpHTTP", "CStreamUpSystem"],
            linkerSettings: exportsCurlHooks
        ),
        // Examples/, built by CI and shown in README.md.
        .executableTarget(name: "example-log-shipper", dependencies: ["StreamUp", "StreamUpTail", "StreamUpSink"], path: "Examples/LogShipper"),
        .executableTarget(name: "example-telemetry-emitter", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/TelemetryEmitter"),
        .executableTarget(name: "example-heartbeat-monitor", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/HeartbeatMonitor"),
        .executableTarget(name: "example-custom-producer", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/CustomProducer"),
        // Test helpers shared by the test targets: one way to wait (a poll with a scaled deadline), a
        // manual clock, an event recorder, seeded randomness, temporary directories, a scripted HTTP
        // server, the built binary as a child process.
        .target(name: "StreamUpTestSupport", dependencies: ["StreamUpHTTP"], path: "Tests/StreamUpTestSupport"),
        .testTarget(name: "StreamUpHTTPTests", dependencies: ["StreamUpHTTP", "StreamUpTestSupport"]),
        .testTarget(name: "StreamUpSystemTests", dependencies: ["StreamUpSystem"]),
        .testTarget(
            name: "StreamUpTests", dependencies: ["StreamUp", "StreamUpSink", "StreamUpSystem", "StreamUpTestSupport", "CStreamUpCurl"],
            linkerSettings: exportsCurlHooks),
        .testTarget(name: "StreamUpTailTests", dependencies: ["StreamUpTail", "StreamUp", "StreamUpSystem", "StreamUpTestSupport"]),
        .testTarget(name: "StreamUpJournalTests", dependencies: ["StreamUpJournal", "StreamUp", "StreamUpTestSupport"]),
        .testTarget(name: "StreamUpSinkTests", dependencies: ["StreamUpSink", "StreamUpSystem", "StreamUpHTTP", "StreamUpTestSupport"]),
        .testTarget(name: "streamupTests", dependencies: ["StreamUp", "StreamUpTail", "StreamUpSink", "StreamUpSystem", "StreamUpTestSupport", "streamup"]),
    ],
    swiftLanguageModes: [.v6]
)
