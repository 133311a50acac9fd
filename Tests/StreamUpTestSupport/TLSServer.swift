import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificates made for one test with the system's `openssl` (EC P-256, quick to make) in a
/// temporary directory: a private CA and another one, and leaf certificates the first signs
/// (or that sign themselves) for servers and clients.
///
/// Thread safety: used from one test's task; the files are written once in `init`.
public final class TestCertificates: Sendable {
    /// What a certificate is like.
    ///
    /// Thread safety: a value type.
    public enum Kind: String, Sendable, CaseIterable {
        /// A server's, signed by the test CA, for 127.0.0.1 and localhost, valid for a day.
        case signedByTestCA
        /// A server's, its own issuer (no CA).
        case selfSigned
        /// A server's, signed by the test CA, for logs.example only.
        case wrongName
        /// A server's, signed by the test CA, expired a day ago.
        case expired
        /// A client's (CN `client`), signed by the test CA, valid for a day.
        case client
        /// Another client's (CN `client2`), signed by the test CA, valid for a day.
        case secondClient
        /// A client's (CN `stranger`), signed by the other CA.
        case clientOfOtherCA
        /// A client's (CN `late`), signed by the test CA, expired a day ago.
        case expiredClient
    }

    private let temporary: TemporaryDirectory
    public var directory: URL { temporary.url }
    /// The test CA's certificate (PEM).
    public var caCertificate: String { directory.appendingPathComponent("ca.crt").path }
    /// Another CA's certificate, which signed none of the server certificates.
    public var otherCACertificate: String { directory.appendingPathComponent("other-ca.crt").path }

    /// Makes both CAs and the certificates of `kinds`.
    public init(_ kinds: [Kind] = Kind.allCases) async throws {
        temporary = try TemporaryDirectory()
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        var script = """
            set -e
            openssl req -x509 \(ec) -keyout ca.key -out ca.crt -days 2 -subj '/CN=streamup test CA'
            openssl req -x509 \(ec) -keyout other-ca.key -out other-ca.crt -days 2 -subj '/CN=another CA'
            """
        if kinds.contains(.selfSigned) {
            script += "\nopenssl req -x509 \(ec) -keyout selfSigned.key -out selfSigned.crt -days 1 -subj '/CN=127.0.0.1' -addext subjectAltName=IP:127.0.0.1"
        }
        let signed: [(Kind, String, String, Int, String)] = [
            (.signedByTestCA, "signedByTestCA", "subjectAltName=IP:127.0.0.1,DNS:localhost", 1, "ca"),
            (.wrongName, "wrongName", "subjectAltName=DNS:logs.example", 1, "ca"),
            (.expired, "expired", "subjectAltName=IP:127.0.0.1", -1, "ca"),
            (.client, "client", "extendedKeyUsage=clientAuth", 1, "ca"),
            (.secondClient, "client2", "extendedKeyUsage=clientAuth", 1, "ca"),
            (.clientOfOtherCA, "stranger", "extendedKeyUsage=clientAuth", 1, "other-ca"),
            (.expiredClient, "late", "extendedKeyUsage=clientAuth", -1, "ca"),
        ]
        for (kind, name, extensions, days, ca) in signed where kinds.contains(kind) {
            script += """

                openssl req \(ec) -keyout \(kind.rawValue).key -out \(kind.rawValue).csr -subj '/CN=\(name)'
                printf '\(extensions)\\n' > \(kind.rawValue).ext
                openssl x509 -req -in \(kind.rawValue).csr -CA \(ca).crt -CAkey \(ca).key -CAcreateserial -out \(kind.rawValue).crt -days \(days) -extfile \(kind.rawValue).ext
                """
        }
        try await runShell(script, in: directory)
    }

    /// The certificate and key files of `kind`.
    public func files(_ kind: Kind) -> (certificate: String, key: String) {
        (directory.appendingPathComponent("\(kind.rawValue).crt").path, directory.appendingPathComponent("\(kind.rawValue).key").path)
    }
}

/// An HTTPS server on 127.0.0.1 (Python's `ssl` and `http.server`, a child process) with a
/// certificate from ``TestCertificates``: it reads each POST's body (chunked or with a length),
/// answers 200 `{"bytes": N}`; a GET is answered 200 `{"client": NAME}`, or 307 to the URL after
/// `/redirect/`. It prints one JSON line per request (the path, the body, and the client
/// certificate's common name), which the test reads back through ``requests``. With a
/// client CA it requires a client certificate that CA issued (`CERT_REQUIRED`), and refuses any
/// other with a TLS alert after the handshake (TLS 1.3). A client that refuses the server's
/// certificate, or that it refuses, never gets to send a request.
///
/// Thread safety: the child's output is collected by ``StreamupProcess`` under its lock.
public final class TLSServer: Sendable {
    private let child: StreamupProcess
    /// The interpreter's own process: `python3` may be a wrapper (pyenv's shim) that runs it as
    /// a child, which a signal to the wrapper would leave running.
    private let pid: Int32
    public let port: Int
    public var url: String { "https://127.0.0.1:\(port)/ingest" }

    private static let program = #"""
        import http.server, json, os, ssl, sys, urllib.parse
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def client(self):
                peer = self.connection.getpeercert() or {}
                return dict(part[0] for part in peer.get("subject", ())).get("commonName")
            def answer(self, status, body, headers=()):
                self.send_response(status)
                for name, value in headers: self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                print(json.dumps({"path": self.path, "body": "", "client": self.client()}), flush=True)
                if self.path.startswith("/redirect/"):
                    self.answer(307, b"", [("Location", urllib.parse.unquote(self.path[len("/redirect/"):]))])
                else:
                    self.answer(200, json.dumps({"client": self.client()}).encode())
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
                print(json.dumps({"path": self.path, "body": body.decode("utf-8", "replace"), "client": self.client()}), flush=True)
                self.answer(200, json.dumps({"bytes": len(body)}).encode())
            def log_message(self, *arguments): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        if len(sys.argv) > 3:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("listening on https://127.0.0.1:%d %d" % (server.server_address[1], os.getpid()), flush=True)
        server.serve_forever()
        """#

    /// A server that accepts connections and closes each at once, in the middle of the client's
    /// TLS handshake.
    private static let closing = #"""
        import os, socket
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        print("listening on https://127.0.0.1:%d %d" % (server.getsockname()[1], os.getpid()), flush=True)
        while True:
            connection, _ = server.accept()
            connection.recv(16)
            connection.close()
        """#

    /// Starts a server presenting `certificate` (with `key`); with `clientCA`, one that requires
    /// a client certificate that CA issued.
    public convenience init(certificate: String, key: String, clientCA: String? = nil) async throws {
        try await self.init(["python3", "-c", Self.program, certificate, key] + (clientCA.map { [$0] } ?? []))
    }

    /// Starts a server that closes every connection during the TLS handshake.
    public static func closingHandshakes() async throws -> TLSServer {
        try await TLSServer(["python3", "-c", closing])
    }

    private init(_ arguments: [String]) async throws {
        child = try StreamupProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), arguments)
        let words = await child.firstLine(timeout: 20)?.split(separator: " ") ?? []
        guard words.count == 4, let port = Int(words[2].split(separator: ":").last ?? ""), let pid = Int32(words[3]) else {
            child.signal(SIGKILL)
            throw TLSServerError(message: "the TLS server did not start: \(child.stderr)")
        }
        self.port = port
        self.pid = pid
    }

    /// One request the server answered.
    ///
    /// Thread safety: a value type.
    public struct Request: Sendable, Equatable {
        public var path: String
        /// The body, as UTF-8 text.
        public var body: String
        /// The client certificate's common name, if one was presented.
        public var client: String?
    }

    /// The requests answered so far, in order.
    public var requests: [Request] {
        child.stdout.split(separator: "\n").dropFirst().compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let path = object["path"] as? String, let body = object["body"] as? String
            else { return nil }
            return Request(path: path, body: body, client: object["client"] as? String)
        }
    }

    /// Stops the server: SIGKILL to the interpreter (a child of the test runner may start with
    /// SIGTERM blocked, and a test server has nothing to flush), then its wrapper ends too.
    public func stop() async {
        kill(pid, SIGKILL)
        _ = await child.waitForExit(timeout: 10)
    }
}

/// A TLS server that did not start, or a shell command that failed.
///
/// Thread safety: a value type.
public struct TLSServerError: Error, CustomStringConvertible {
    public let message: String
    public init(message: String) {
        self.message = message
    }
    public var description: String { message }
}

/// Runs `script` with `/bin/sh` in `directory` to its end on a thread of its own; throws with
/// its stderr when it fails.
public func runShell(_ script: String, in directory: URL) async throws {
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
