import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The clients of the waiting runs: each sends the same small `POST`s, one after another, to a
/// receiver that answers each only after a delay, so nearly all of a run is waiting.
///
/// - ``streamup``: `streamup --segment-seconds 100ms URL`, the bench writing one line into its
///   stdin after each answer (so each line is a small segment of its own);
/// - ``bare``: this bench run as a child in its `--bare-post` mode (``BarePoster``): a bare
///   `URLSession.uploadTask(with:from:)` per request, no streamup code;
/// - ``curl``: one `curl --data-binary` with the URL given once per request (one connection).
///
/// Thread safety: a value type.
enum WaitClient: String, Sendable, CaseIterable {
    case streamup
    case bare
    case curl

    var title: String {
        switch self {
        case .streamup: "streamup (a small segment per request)"
        case .bare: "bare URLSession program"
        case .curl: "curl"
        }
    }

    func arguments(url: String, requests: Int) -> [String] {
        switch self {
        case .streamup: ["--segment-seconds", "100ms", url]
        case .bare: [BarePoster.flag, url, String(requests)]
        case .curl: ["-sS", "--data-binary", WaitRun.line.trimmingCharacters(in: .newlines)] + Array(repeating: url, count: requests)
        }
    }

    func displayCommand(requests: Int) -> String {
        let program =
            switch self {
            case .streamup: "streamup"
            case .bare: "streamup-bench"
            case .curl: "curl"
            }
        let quoted = arguments(url: "URL", requests: requests).map { $0.contains(" ") ? "'\($0)'" : $0 }
        return ([program] + quoted).joined(separator: " ")
    }
}

/// One waiting run: what the client cost while its requests waited.
///
/// Thread safety: an immutable value.
struct WaitResult: Sendable {
    let client: WaitClient
    let exit: ChildExit
    /// From just before spawn to the exit.
    let seconds: Double
    let failure: String?
}

/// Runs one client against a ``SlowReceiver`` that answers each request `delay` seconds after
/// it ended; the client's CPU (GNU time) is the cost of waiting, since sending a few bytes
/// costs next to nothing.
///
/// Thread safety: stateless; runs on the caller's thread (plus the receiver's threads).
enum WaitRun {
    static let line = "waiting for an answer\n"

    static func run(
        _ client: WaitClient, binaries: Binaries, requests: Int, delay: Double, stallSeconds: Double
    ) throws(BenchError) -> WaitResult {
        let receiver = try SlowReceiver(delay: delay)
        defer { receiver.stop() }
        let stderrFile = NSTemporaryDirectory() + "streamup-bench-\(getpid())-wait-\(client.rawValue).stderr"
        defer { unlink(stderrFile) }
        let pipe = client == .streamup ? try Descriptors.pipe() : nil
        let program =
            switch client {
            case .streamup: binaries.streamup
            case .bare: binaries.bench
            case .curl: binaries.curl
            }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                program, client.arguments(url: receiver.url, requests: requests),
                stdin: pipe.map { .descriptor($0.read) } ?? .file("/dev/null"), stderr: .file(stderrFile), measuredBy: binaries.time)
        } catch {
            if let pipe {
                close(pipe.read)
                close(pipe.write)
            }
            throw error
        }
        var failure: String?
        if let pipe {
            close(pipe.read)
            // One line per request, each after the answer to the one before.
            for index in 0..<requests where failure == nil {
                _ = Array(line.utf8).withUnsafeBytes { Descriptors.writeAll(pipe.write, $0) }
                let deadline = MonotonicClock.now() + UInt64((delay + stallSeconds * 2) * 1e9)
                while receiver.answered <= index && MonotonicClock.now() < deadline {
                    MonotonicClock.sleep(seconds: 0.005)
                }
                if receiver.answered <= index { failure = "request \(index + 1) was not answered in time" }
            }
            close(pipe.write)
        }
        let limit = (delay + stallSeconds) * Double(requests + 1)
        let (exit, killed) = child.wait { MonotonicClock.seconds(MonotonicClock.now() - child.startNanos) > limit }
        let seconds = MonotonicClock.seconds(exit.endNanos - child.startNanos)
        if failure == nil && killed {
            failure = "did not end within \(Int(limit)) s; killed"
        } else if failure == nil && !exit.succeeded {
            let message = (try? String(contentsOfFile: stderrFile, encoding: .utf8))?.split(separator: "\n").first.map(String.init) ?? ""
            failure = "exit status \(exit.status)" + (message.isEmpty ? "" : ": \(message)")
        } else if failure == nil && receiver.answered != requests {
            failure = "the receiver answered \(receiver.answered) requests, not \(requests)"
        }
        return WaitResult(client: client, exit: exit, seconds: seconds, failure: failure)
    }
}

/// A ``ProbeServer`` that reads each request whole and answers `200` with a 2-byte body only
/// `delay` seconds after the request ended, keeping the connection.
///
/// Thread safety: the count of answers is behind a `LockedValue`; callable from any thread.
final class SlowReceiver: Sendable {
    private let answers = LockedValue(0)
    private let server: ProbeServer

    init(delay: Double) throws(BenchError) {
        let answers = self.answers
        server = try ProbeServer(name: "slow") { fd in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 64)
            defer { buffer.deallocate() }
            var reader = RequestReader()
            while true {
                let count = recv(fd, buffer.baseAddress, buffer.count, 0)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                var ended = 0
                do {
                    try reader.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { expectsContinue in
                        if expectsContinue { _ = Descriptors.sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") }
                    } onBody: { _ in
                    } onEnd: {
                        ended += 1
                    }
                } catch {
                    return
                }
                for _ in 0..<ended {
                    MonotonicClock.sleep(seconds: delay)
                    guard Descriptors.sendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") else { return }
                    answers.update { $0 += 1 }
                }
            }
        }
    }

    var url: String { server.url }

    /// Requests answered so far.
    var answered: Int { answers.get() }

    func stop() {
        server.stop(graceSeconds: 0)
    }
}
