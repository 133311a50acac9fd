import Foundation
import StreamUpSink

#if canImport(Glibc)
import Glibc
#endif

/// What one client did over the many-requests soak.
///
/// Thread safety: an immutable value.
struct RequestSoakResult: Sendable {
    let client: String
    let requests: Int
    let samples: [SoakSample]
    let exit: ChildExit
    /// Why the run does not count, or nil.
    let failure: String?
}

/// The many-requests soak: `streamup --segment-bytes SEGMENT URL` reading a pipe, and the bare
/// URLSession program sending the same bytes as requests of the same size one at a time, each
/// for `requests` requests against the in-process sink. Resident memory, open descriptors and
/// threads are sampled every second: an agent that sends a request a second for a month sends
/// 2.6 million, so memory must not grow with their number.
///
/// Thread safety: stateless; runs on the caller's thread (plus the sampler's).
enum RequestSoak {
    static let segmentBytes = 4_096

    static func run(binaries: Binaries, requests: Int, stallSeconds: Double) throws(BenchError) -> [RequestSoakResult] {
        let answered = LockedValue<[String: Int]>([:])
        var configuration = SinkConfiguration(host: "127.0.0.1", port: 0)
        configuration.hashBodies = false
        configuration.recentEventLimit = 0
        let sink: SinkServer
        do {
            sink = try SinkServer(configuration: configuration) { event in
                if event.status == 200 { answered.update { $0[event.path, default: 0] += 1 } }
            }
        } catch {
            throw BenchError("cannot start the in-process sink: \(error)")
        }
        sink.start()
        defer { sink.stop() }
        let bytes = requests * segmentBytes
        var results: [RequestSoakResult] = []
        for client in ["streamup", "bare URLSession"] {
            let path = client == "streamup" ? "/soak-streamup" : "/soak-bare"
            let url = sink.urlString.dropLast(sink.urlString.hasSuffix("/") ? 1 : 0) + path
            let child: ChildProcess
            var generator: PipeGenerator?
            if client == "streamup" {
                let pipe = try Descriptors.pipe()
                child = try ChildProcess.spawn(
                    binaries.streamup, ["--segment-bytes", String(segmentBytes), String(url)], stdin: .descriptor(pipe.read),
                    measuredBy: binaries.time)
                close(pipe.read)
                generator = PipeGenerator(writingTo: pipe.write, total: bytes)
            } else {
                child = try ChildProcess.spawn(
                    binaries.bench, [BareUploader.segmentsFlag, String(url), String(bytes), String(segmentBytes)], measuredBy: binaries.time)
            }
            Progress.log("soak: \(client), \(requests) requests of \(segmentBytes) bytes")
            let sampler = SoakSampler(pid: child.pid, interval: 1) { answered.get()[path] ?? 0 }
            let stall = StallWatch(seconds: stallSeconds) { answered.get()[path] ?? 0 }
            let (exit, killed) = child.wait { stall.isStalled() }
            generator?.join()
            let samples = sampler.stop()
            let count = answered.get()[path] ?? 0
            var failure: String?
            if killed {
                failure = "stalled at \(count) requests and was killed"
            } else if exit.status != 0 {
                failure = "exit status \(exit.status)"
            } else if count != requests {
                failure = "\(count) requests answered, \(requests) expected"
            }
            results.append(RequestSoakResult(client: client, requests: count, samples: samples, exit: exit, failure: failure))
            Progress.log("soak: \(client) done: \(count) requests, peak RSS \(exit.maxRSSKiB / 1024) MiB\(failure.map { "; \($0)" } ?? "")")
        }
        return results
    }
}
