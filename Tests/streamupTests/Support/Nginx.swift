import Foundation
import StreamUpTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real nginx (Debian's, 1.22 on Debian 12) for one test: a reverse proxy on a free loopback
/// port in front of `upstream`, HTTP/1.1 to it, run in the foreground as one process with its
/// files in a temporary directory, and stopped by the test (SIGKILL, see below).
///
/// Thread safety: used from one test's task.
final class Nginx: Sendable {
    static let executable = "/usr/sbin/nginx"

    /// nginx as a tool the tests need (`.ci/run` installs it).
    static let tool = OptionalTool.program(executable, install: "apt-get install nginx")

    /// Tests that need nginx run where it is installed, and always under CI (where its absence
    /// is a failure, not a skip).
    static var isAvailable: Bool { tool.isAvailable }

    let url: URL
    private let process: StreamupProcess
    private let directory: TemporaryDirectory

    private init(url: URL, process: StreamupProcess, directory: TemporaryDirectory) {
        self.url = url
        self.process = process
        self.directory = directory
    }

    /// TLS for nginx's listening side: its certificate and key, and the CA whose client
    /// certificates it requires (`ssl_verify_client on`), if any.
    ///
    /// Thread safety: a value type.
    struct TLS {
        var certificate: String
        var key: String
        var clientCA: String?
    }

    /// Runs `body` with nginx proxying every path to `upstream` (its scheme, host and port),
    /// taking bodies up to `bodyLimit` (`client_max_body_size`; nginx's own default is 1m);
    /// `location` adds directives to that location (e.g. `proxy_request_buffering off;`), `http`
    /// to the `http` block (e.g. a `limit_req_zone`); with `tls`, nginx speaks HTTPS.
    static func with<T>(
        proxyingTo upstream: URL, bodyLimit: String = "16m", location: String = "", http: String = "", tls: TLS? = nil,
        _ body: (Nginx) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        let path = directory.path
        let port = unusedLocalPort()
        let upstreamAddress = "\(upstream.host ?? "127.0.0.1"):\(upstream.port ?? 80)"
        var listen = "listen 127.0.0.1:\(port);"
        if let tls {
            listen = "listen 127.0.0.1:\(port) ssl;\n    ssl_certificate \(tls.certificate);\n    ssl_certificate_key \(tls.key);"
            if let clientCA = tls.clientCA { listen += "\n    ssl_client_certificate \(clientCA);\n    ssl_verify_client on;" }
        }
        let configuration = """
            daemon off;
            master_process off;
            pid \(path)/nginx.pid;
            error_log \(path)/error.log info;
            events { worker_connections 64; }
            http {
              access_log \(path)/access.log;
              client_body_temp_path \(path)/body;
              proxy_temp_path \(path)/proxy;
              \(http)
              server {
                \(listen)
                location / {
                  proxy_pass http://\(upstreamAddress);
                  proxy_http_version 1.1;
                  proxy_set_header Connection "";
                  client_max_body_size \(bodyLimit);
                  \(location)
                }
              }
            }
            """
        try configuration.write(toFile: "\(path)/nginx.conf", atomically: true, encoding: .utf8)
        let process = try StreamupProcess(executable: URL(fileURLWithPath: executable), ["-p", path, "-c", "\(path)/nginx.conf"])
        let listening = await eventually { isListening(port) || process.hasExited }
        guard listening, !process.hasExited else {
            process.signal(SIGKILL)
            _ = await process.waitForExit()
            let log = (try? String(contentsOfFile: "\(path)/error.log", encoding: .utf8)) ?? ""
            throw NginxError(message: "nginx did not start: \(process.stderr) \(log)")
        }
        let server = Nginx(url: URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/")!, process: process, directory: directory)
        let result: Result<T, Error>
        do {
            result = .success(try await body(server))
        } catch {
            result = .failure(error)
        }
        // SIGKILL: a single nginx process started from the test runner inherits a signal mask
        // that blocks SIGTERM (it did not stop in 60 s), and it keeps nothing worth a clean stop.
        process.signal(SIGKILL)
        _ = await process.waitForExit()
        return try result.get()
    }

    /// nginx's access log so far: one line per request it answered.
    var accessLog: String {
        (try? String(contentsOfFile: directory.path + "/access.log", encoding: .utf8)) ?? ""
    }

    /// Whether something accepts connections on 127.0.0.1:`port`.
    private static func isListening(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, POSIXCalls.streamSocket, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// nginx did not start.
///
/// Thread safety: a value type.
struct NginxError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
