// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "streamup",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "StreamUp", targets: ["StreamUp"]),
        .library(name: "StreamUpSink", targets: ["StreamUpSink"]),
        .executable(name: "streamup", targets: ["streamup"]),
    ],
    targets: [
        // The system zlib (gzip bodies, spool checksums), from Debian's zlib1g-dev.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Bound stream pair, uploader, producers, telemetry emitter. Foundation and zlib only.
        .target(name: "StreamUp", dependencies: ["CZlib"]),
        // The local HTTP/1.1 sink: POSIX sockets, no URLSession.
        .target(name: "StreamUpSink"),
        // The command-line tool: argv -> options -> calls into the two libraries.
        .executableTarget(name: "streamup", dependencies: ["StreamUp", "StreamUpSink"]),
        .executableTarget(name: "streamup-bench", dependencies: ["StreamUpSink"]),
        // Examples/, built by CI and shown in README.md.
        .executableTarget(name: "example-log-shipper", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/LogShipper"),
        .executableTarget(name: "example-telemetry-emitter", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/TelemetryEmitter"),
        .executableTarget(name: "example-heartbeat-monitor", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/HeartbeatMonitor"),
        .executableTarget(name: "example-custom-producer", dependencies: ["StreamUp", "StreamUpSink"], path: "Examples/CustomProducer"),
        // Test helpers shared by the test targets: one way to wait (a poll with a scaled deadline), a
        // manual clock, an event recorder, seeded randomness, temporary directories, a scripted HTTP
        // server, the built binary as a child process.
        .target(name: "StreamUpTestSupport", path: "Tests/StreamUpTestSupport"),
        .testTarget(name: "StreamUpTests", dependencies: ["StreamUp", "StreamUpSink", "StreamUpTestSupport"]),
        .testTarget(name: "StreamUpSinkTests", dependencies: ["StreamUpSink", "StreamUpTestSupport"]),
        .testTarget(name: "streamupTests", dependencies: ["StreamUp", "StreamUpSink", "StreamUpTestSupport", "streamup"]),
    ],
    swiftLanguageModes: [.v6]
)
