// swift-tools-version:6.0
import PackageDescription

// The benchmark, a package of its own (as swift-log keeps its benchmarks): it depends on the
// root package by path and uses only its products, and it runs the root package's built
// `streamup` binary as a child process. README.md, "Performance", and RESULTS.md give the commands.
let package = Package(
    name: "streamup-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "streamup", path: "..")],
    targets: [
        .executableTarget(
            name: "streamup-bench",
            dependencies: [.product(name: "StreamUpSink", package: "streamup")]
        )
    ],
    swiftLanguageModes: [.v6]
)
