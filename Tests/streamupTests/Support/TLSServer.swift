import Foundation
import StreamUpTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificates made for one test with the system's `openssl` (EC P-256, quick to make) in a
/// temporary directory: a private CA, and leaf certificates it signs (or that sign themselves).
///
/// Thread safety: used from one test's task; the files are written once in `init`.
final class TestCertificates: Sendable {
    /// What a server's certificate is like.
    ///
    /// Thread safety: a value type.
    enum Kind: String, Sendable, CaseIterable {
        /// Signed by the test CA, for 127.0.0.1 and localhost, valid for a day.
        case signedByTestCA
        /// Its own issuer (no CA).
        case selfSigned
        /// Signed by the test CA, for logs.example only.
        case wrongName
        /// Signed by the test CA, expired a day ago.
        case expired
    }

    private let temporary: TemporaryDirectory
    var directory: URL { temporary.url }
    var caCertificate: String { directory.appendingPathComponent("ca.crt").path }

    /// Makes the CA and the certificates of `kinds`.
    init(_ kinds: [Kind] = Kind.allCases) async throws {
        temporary = try TemporaryDirectory()
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        var script = """
            set -e
            openssl req -x509 \(ec) -keyout ca.key -out ca.crt -days 2 -subj '/CN=streamup test CA'
            """
        if kinds.contains(.selfSigned) {
            script += "\nopenssl req -x509 \(ec) -keyout selfSigned.key -out selfSigned.crt -days 1 -subj '/CN=127.0.0.1' -addext subjectAltName=IP:127.0.0.1"
        }
        let signed: [(Kind, String, Int)] = [
            (.signedByTestCA, "IP:127.0.0.1,DNS:localhost", 1), (.wrongName, "DNS:logs.example", 1), (.expired, "IP:127.0.0.1", -1),
        ]
        for (kind, names, days) in signed where kinds.contains(kind) {
            script += """

                openssl req \(ec) -keyout \(kind.rawValue).key -out \(kind.rawValue).csr -subj '/CN=\(kind.rawValue)'
                printf 'subjectAltName=\(names)\\n' > \(kind.rawValue).ext
                openssl x509 -req -in \(kind.rawValue).csr -CA ca.crt -CAkey ca.key -CAcreateserial -out \(kind.rawValue).crt -days \(days) -extfile \(kind.rawValue).ext
                """
        }
        try await runShell(script, in: directory)
    }

    func files(_ kind: Kind) -> (certificate: String, key: String) {
        (directory.appendingPathComponent("\(kind.rawValue).crt").path, directory.appendingPathComponent("\(kind.rawValue).key").path)
    }
}

/// An HTTPS server on 127.0.0.1 (Python's `ssl` and `http.server`, a child process) with a
/// certificate from ``TestCertificates``: it reads each POST's body (chunked or with a length),
/// answers 200 `{"bytes": N}`, and prints one JSON line per request, which the test reads back
/// through ``requests``. A client that refuses the certificate never gets to send a request.
///
/// Thread safety: the child's output is collected by ``StreamupProcess`` under its lock.
final class TLSServer: Sendable {
    private let child: StreamupProcess
    /// The interpreter's own process: `python3` may be a wrapper (pyenv's shim) that runs it as
    /// a child, which a signal to the wrapper would leave running.
    private let pid: Int32
    let port: Int
    var url: String { "https://127.0.0.1:\(port)/ingest" }

    private static let program = #"""
        import http.server, json, os, ssl, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b""): pass
                            break
                        body += self.rfile.read(size)
                        self.rfile.readline()
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                print(json.dumps({"path": self.path, "body": body.decode("utf-8", "replace")}), flush=True)
                answer = json.dumps({"bytes": len(body)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            def log_message(self, *arguments): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("listening on https://127.0.0.1:%d %d" % (server.server_address[1], os.getpid()), flush=True)
        server.serve_forever()
        """#

    init(certificate: String, key: String) async throws {
        child = try StreamupProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.program, certificate, key])
        let words = await child.firstLine(timeout: 20)?.split(separator: " ") ?? []
        guard words.count == 4, let port = Int(words[2].split(separator: ":").last ?? ""), let pid = Int32(words[3]) else {
            child.signal(SIGKILL)
            throw TLSServerError(message: "the TLS server did not start: \(child.stderr)")
        }
        self.port = port
        self.pid = pid
    }

    /// The requests answered so far: path and body (as UTF-8 text).
    var requests: [(path: String, body: String)] {
        child.stdout.split(separator: "\n").dropFirst().compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
                let path = object["path"], let body = object["body"]
            else { return nil }
            return (path, body)
        }
    }

    /// Stops the server: SIGKILL to the interpreter (a child of the test runner may start with
    /// SIGTERM blocked, and a test server has nothing to flush), then its wrapper ends too.
    func stop() async {
        kill(pid, SIGKILL)
        _ = await child.waitForExit(timeout: 10)
    }
}

/// A TLS server that did not start.
///
/// Thread safety: a value type.
struct TLSServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Runs `script` with `/bin/sh` in `directory` to its end on a thread of its own; throws with
/// its stderr when it fails.
func runShell(_ script: String, in directory: URL) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
        Thread.detachNewThread {
            let process = Process()
            let errors = Pipe()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script]
            process.currentDirectoryURL = directory
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            do {
                try process.run()
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                if process.terminationStatus == 0 {
                    continuation.resume()
                } else {
                    continuation.resume(throwing: TLSServerError(message: "sh failed (\(process.terminationStatus)): \(text)"))
                }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// Runs the built `streamup` with a private CA trusted the way README says (copied to
/// `/usr/local/share/ca-certificates/NAME.crt`, then `update-ca-certificates`), without touching
/// the machine's trust store: inside a private mount namespace (`unshare --mount`, root only),
/// `/etc/ssl/certs` and `/usr/local/share/ca-certificates` are bind-mounted over by copies in a
/// temporary directory, and the tool runs there with no hooks (Debian's Java keystore hook would
/// otherwise process dpkg triggers on the real system). The namespace, and with it every change,
/// ends with the process: nothing needs undoing, even when a test is killed. The runs happen
/// one after another inside one namespace, their stdin, stdout and stderr in files.
///
/// Thread safety: stateless.
enum TrustStoreSandbox {
    /// Whether this machine can do it: root, `unshare`, `update-ca-certificates`, and mount
    /// namespaces allowed (a container may forbid them).
    static let isAvailable: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            FileManager.default.isExecutableFile(atPath: "/usr/sbin/update-ca-certificates")
        else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = ["--mount", "--propagation", "private", "/bin/true"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    /// What one run of streamup inside the sandbox did.
    ///
    /// Thread safety: a value type.
    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    private static let script = #"""
        set -e
        work=$1; ca=$2
        mkdir -p "$work/certs" "$work/local" "$work/no-hooks"
        cp -a /etc/ssl/certs/. "$work/certs/"
        cp -a /usr/local/share/ca-certificates/. "$work/local/"
        mount --bind "$work/certs" /etc/ssl/certs
        mount --bind "$work/local" /usr/local/share/ca-certificates
        cp "$ca" /usr/local/share/ca-certificates/streamup-test.crt
        update-ca-certificates --hooksdir "$work/no-hooks" >/dev/null 2>&1
        set +e
        . "$work/runs.sh"
        """#

    /// Runs the built `streamup` once per entry of `runs` (its arguments and its whole stdin),
    /// one after another, with `caCertificate` trusted in their namespace only; the trust store
    /// is set up once for all of them.
    static func streamup(trusting caCertificate: String, runs: [(arguments: [String], input: String)], work: URL) async throws -> [Run] {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        var lines: [String] = []
        for (index, run) in runs.enumerated() {
            let input = work.appendingPathComponent("in-\(index)")
            try Data(run.input.utf8).write(to: input)
            let words = ([StreamupProcess.executable.path] + run.arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
            let output = work.appendingPathComponent("run-\(index)").path
            lines.append("\(words.joined(separator: " ")) < '\(input.path)' > '\(output).out' 2> '\(output).err'; echo $? > '\(output).status'")
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: work.appendingPathComponent("runs.sh"))
        let child = try StreamupProcess(
            executable: URL(fileURLWithPath: "/usr/bin/unshare"),
            ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", work.path, caCertificate])
        child.closeStdin()
        guard await child.waitForExit(timeout: 120) == 0 else {
            throw TLSServerError(message: "the trust-store sandbox failed: \(child.stderr)")
        }
        return try runs.indices.map { index in
            let output = work.appendingPathComponent("run-\(index)").path
            let status = try String(contentsOfFile: output + ".status", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            return Run(
                status: Int32(status) ?? -1, stdout: try String(contentsOfFile: output + ".out", encoding: .utf8),
                stderr: try String(contentsOfFile: output + ".err", encoding: .utf8))
        }
    }
}
