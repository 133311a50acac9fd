// Minimal reproducer: URLSession on Linux burns CPU while it waits for an answer
// (swift-corelibs-foundation keeps a dispatch write source on the socket after libcurl stops
// asking for write readiness; see Sources/StreamUp/StreamUp.docc/DesignNotes.md, "Waiting for
// an answer spins a core"). Not part of the package build.
//
//   swiftc -O WaitSpin.swift -o waitspin
//   python3 slow_server.py 18999 5 &          # answers every request after 5 s, keeps connections
//   ./waitspin http://127.0.0.1:18999/ MODE   # prints the CPU the measured request cost
//
// MODE: get | post-small | post4m | BYTES (a POST of that many bytes), optionally prefixed with
// "warm-": one request first on the same session (not counted), so the measured one reuses
// the connection.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

func cpuSeconds() -> (user: Double, system: Double) {
    var usage = rusage(); getrusage(RUSAGE_SELF.rawValue, &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return (s(usage.ru_utime), s(usage.ru_stime))
}

func send(_ session: URLSession, _ url: URL, body: Data?) {
    let done = DispatchSemaphore(value: 0)
    var request = URLRequest(url: url)
    let task: URLSessionTask
    if let body {
        request.httpMethod = "POST"
        task = session.uploadTask(with: request, from: body) { _, response, error in
            if let error { print("error: \(error)") } else { print("status \((response as! HTTPURLResponse).statusCode)") }
            done.signal()
        }
    } else {
        task = session.dataTask(with: request) { _, response, error in
            if let error { print("error: \(error)") } else { print("status \((response as! HTTPURLResponse).statusCode)") }
            done.signal()
        }
    }
    task.resume()
    done.wait()
}

let url = URL(string: CommandLine.arguments[1])!
let mode = CommandLine.arguments[2]
let session = URLSession(configuration: .ephemeral)
let warm = mode.hasPrefix("warm-")
let kind = warm ? String(mode.dropFirst(5)) : mode
let body: Data? = switch kind {
case "get": nil
case "post-small": Data(repeating: 0x61, count: 100)
case "post4m": Data(repeating: 0x61, count: 4 << 20)
case let size where Int(size) != nil: Data(repeating: 0x61, count: Int(size)!)
default: fatalError("mode: get | post4m | post-small, optionally warm-")
}
if warm { send(session, url, body: kind == "get" ? nil : Data("warm".utf8)) }
let before = cpuSeconds()
let start = Date()
send(session, url, body: body)
let after = cpuSeconds()
print(String(format: "%@: %.2f s waiting, CPU user %.2f s + system %.2f s", mode, Date().timeIntervalSince(start), after.user - before.user, after.system - before.system))
