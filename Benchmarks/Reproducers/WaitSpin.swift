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
// the connection; and "stream-": the POST body is an InputStream (`uploadTask(withStreamedRequest:)`
// with `Content-Length`, as a segment goes), not `Data`. "expect-" sends `Expect: 100-continue`
// (the default for large bodies); otherwise an empty `Expect` turns it off.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

func cpuSeconds() -> (user: Double, system: Double) {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return (s(usage.ru_utime), s(usage.ru_stime))
}

final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    var body = Data()
    var done = DispatchSemaphore(value: 0)
    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping (InputStream?) -> Void) {
        completionHandler(InputStream(data: body))
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error { print("error: \(error)") } else { print("status \((task.response as! HTTPURLResponse).statusCode)") }
        done.signal()
    }
}

func send(_ session: URLSession, _ delegate: Delegate, _ url: URL, body: Data?, stream: Bool, expect: Bool) {
    var request = URLRequest(url: url)
    let task: URLSessionTask
    if let body {
        request.httpMethod = "POST"
        request.setValue(expect ? "100-continue" : "", forHTTPHeaderField: "Expect")
        if stream {
            request.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
            request.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
            delegate.body = body
            task = session.uploadTask(withStreamedRequest: request)
        } else {
            task = session.uploadTask(with: request, from: body)
        }
    } else {
        task = session.dataTask(with: request)
    }
    task.resume()
    delegate.done.wait()
}

let url = URL(string: CommandLine.arguments[1])!
var kind = Substring(CommandLine.arguments[2])
let mode = kind
var options: Set<String> = []
for prefix in ["warm-", "stream-", "expect-"] where kind.hasPrefix(prefix) || kind.contains(prefix) {
    if let r = kind.range(of: prefix) {
        kind.removeSubrange(r)
        options.insert(prefix)
    }
}
let delegate = Delegate()
let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
let body: Data? =
    switch kind {
    case "get": nil
    case "post-small": Data(repeating: 0x61, count: 100)
    case "post4m": Data(repeating: 0x61, count: 4 << 20)
    case let size where Int(size) != nil: Data(repeating: 0x61, count: Int(size)!)
    default: fatalError("mode: [warm-][stream-][expect-](get | post4m | post-small | BYTES)")
    }
let stream = options.contains("stream-")
let expect = options.contains("expect-")
if options.contains("warm-") { send(session, delegate, url, body: kind == "get" ? nil : Data("warm".utf8), stream: stream, expect: false) }
let before = cpuSeconds()
let start = Date()
send(session, delegate, url, body: body, stream: stream, expect: expect)
let after = cpuSeconds()
print(
    String(
        format: "%@: %.2f s waiting, CPU user %.2f s + system %.2f s", String(mode), Date().timeIntervalSince(start), after.user - before.user,
        after.system - before.system))
