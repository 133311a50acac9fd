import Foundation

/// A program or Python module that some tests need beyond the toolchain, `python3` and `gzip`
/// (README's set-up names them all; `.ci/run` installs what is missing).
///
/// Outside CI a test whose tool is missing is skipped, with ``skipReason`` (what to install) as
/// the reason and one line on stdout saying the same. Under CI (`CI` set in the environment, as
/// `.ci/run` and CI services set it) the test runs anyway, so a missing tool is a failure there,
/// never a silent skip.
///
/// Thread safety: a value type; ``isAvailable`` probes the machine on each call.
public struct OptionalTool: Sendable {
    /// What the tool is, as the skip line names it ("Python's prometheus_client").
    public let name: String
    /// The command that installs it.
    public let install: String
    private let isInstalled: @Sendable () -> Bool

    /// A tool found by `isInstalled`.
    public init(name: String, install: String, isInstalled: @escaping @Sendable () -> Bool) {
        self.name = name
        self.install = install
        self.isInstalled = isInstalled
    }

    /// A program at an absolute path.
    public static func program(_ path: String, install: String) -> OptionalTool {
        OptionalTool(name: path, install: install) { FileManager.default.isExecutableFile(atPath: path) }
    }

    /// A program looked up on `PATH`.
    public static func command(_ name: String, install: String) -> OptionalTool {
        OptionalTool(name: name, install: install) {
            (try? ExternalTool.run(["sh", "-c", "command -v \"$0\"", name]).status) == 0
        }
    }

    /// A module `python3` imports.
    public static func pythonModule(_ module: String, install: String) -> OptionalTool {
        OptionalTool(name: "Python's \(module)", install: install) {
            (try? ExternalTool.python("import \(module)").status) == 0
        }
    }

    /// The parser the `--metrics` tests read scrapes with.
    public static let prometheusClient = pythonModule(
        "prometheus_client", install: "python3 -m pip install prometheus_client (Debian 12: add --break-system-packages)")

    /// What the OTLP validator decodes protobuf requests with: the OpenTelemetry project's
    /// own classes.
    public static let opentelemetryProto = OptionalTool(
        name: "Python's opentelemetry-proto",
        install: "python3 -m pip install opentelemetry-proto (Debian 12: add --break-system-packages)"
    ) {
        (try? ExternalTool.python("import opentelemetry.proto.collector.logs.v1.logs_service_pb2").status) == 0
    }

    /// What the TLS tests make their certificates with.
    public static let openssl = command("openssl", install: "apt-get install openssl")

    /// Whether the tests that need it run: where it is installed, and always under CI.
    /// Prints ``skipReason`` when they are skipped.
    public var isAvailable: Bool {
        if isInstalled() || ProcessInfo.processInfo.environment["CI"] != nil { return true }
        print("skipping: \(skipReason)")
        return false
    }

    /// Why a test that needs it is skipped, and what to do.
    public var skipReason: String {
        "needs \(name), which is not installed: \(install) (.ci/run installs it)"
    }
}
