import Foundation

/// Resident memory of a `streamup sink` process while it holds N slow streams.
///
/// Thread safety: an immutable value.
struct SinkMemoryResult: Sendable {
    let connections: Int
    let baselineKiB: Int
    let loadedKiB: Int

    var addedKiB: Int { loadedKiB - baselineKiB }
    var perConnectionKiB: Double { Double(addedKiB) / Double(connections) }
}

/// Starts `streamup sink --port 0 --no-hash` as a child, reads its VmRSS with no connection,
/// opens N raw connections that each send a chunked `PUT` head and then a few bytes slowly
/// (three 4-byte chunks, 100 ms apart, never the last chunk), waits until the sink runs a
/// thread for each, and reads VmRSS again. A fresh sink is used for every N.
///
/// Thread safety: stateless; runs on the caller's thread (plus a thread draining the sink's stdout).
enum SinkMemory {
    static let arguments = ["sink", "--port", "0", "--no-hash"]

    static func measure(streamup: String, connections: Int) throws(BenchError) -> SinkMemoryResult {
        let output = try Descriptors.pipe()
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(streamup, arguments, stdout: .descriptor(output.write))
        } catch {
            close(output.read)
            close(output.write)
            throw error
        }
        close(output.write)
        let reader = OutputReader(fd: output.read)
        var sockets: [CInt] = []
        defer {
            for fd in sockets { close(fd) }
            child.signal(SIGTERM)
            let started = MonotonicClock.now()
            _ = child.wait { MonotonicClock.now() - started > 5_000_000_000 }
            reader.join()
        }
        guard let firstLine = reader.firstLine(timeout: 10) else {
            throw BenchError("`streamup sink` printed no first line within 10 s")
        }
        guard let portText = firstLine.split(separator: ":").last, let port = UInt16(portText),
            firstLine.hasPrefix("listening on ")
        else {
            throw BenchError("unexpected first line from `streamup sink`: \(firstLine)")
        }
        MonotonicClock.sleep(seconds: 0.3)
        let baseline = try ProcStatus.read(pid: child.pid)

        for _ in 0..<connections {
            let fd = try Descriptors.connectToLoopback(port: port)
            sockets.append(fd)
            _ = Descriptors.sendAll(fd, "PUT /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
        for _ in 0..<3 {
            for fd in sockets { _ = Descriptors.sendAll(fd, "4\r\nabc\n\r\n") }
            MonotonicClock.sleep(seconds: 0.1)
        }
        let deadline = MonotonicClock.now() + 15_000_000_000
        while try ProcStatus.read(pid: child.pid).threads < baseline.threads + connections {
            guard MonotonicClock.now() < deadline else {
                throw BenchError("the sink did not start a thread for each of \(connections) connections within 15 s")
            }
            MonotonicClock.sleep(seconds: 0.05)
        }
        MonotonicClock.sleep(seconds: 0.3)
        let loaded = try ProcStatus.read(pid: child.pid)
        return SinkMemoryResult(connections: connections, baselineKiB: baseline.rssKiB, loadedKiB: loaded.rssKiB)
    }
}

/// `VmRSS` and `Threads` from `/proc/PID/status`.
///
/// Thread safety: an immutable value.
struct ProcStatus: Sendable {
    let rssKiB: Int
    let threads: Int
    /// The anonymous part of `rssKiB` (heap, anonymous mappings), and the file-backed part
    /// (mapped files: the binary, libraries, a spool's mapped pages).
    var anonymousKiB = 0
    var fileKiB = 0

    static func read(pid: pid_t) throws(BenchError) -> ProcStatus {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw BenchError("cannot read /proc/\(pid)/status (did the process exit?)")
        }
        func field(_ name: String) -> Int? {
            text.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first }
                .flatMap { Int($0) }
        }
        guard let rss = field("VmRSS"), let threads = field("Threads") else {
            throw BenchError("no VmRSS/Threads in /proc/\(pid)/status")
        }
        return ProcStatus(rssKiB: rss, threads: threads, anonymousKiB: field("RssAnon") ?? 0, fileKiB: field("RssFile") ?? 0)
    }
}
