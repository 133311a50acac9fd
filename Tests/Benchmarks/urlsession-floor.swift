// The memory floor of shipping a file with URLSession and nothing else (Benchmarks/RESULTS.md, "Memory of the
// default mode", second round): one 1 MB POST a second, as a followed 1 MB/s log's segments.
//
//   swiftc -O -static-stdlib Tests/Benchmarks/urlsession-floor.swift -o /tmp/urlsession-floor
//   /usr/bin/time -f %M /tmp/urlsession-floor http://127.0.0.1:PORT/ 20
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let url = URL(string: CommandLine.arguments[1])!
let seconds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 20 : 20
let session = URLSession(configuration: .default)
let body = Data(repeating: 0x61, count: 1_000_000)
for _ in 0..<seconds {
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    let answered = DispatchSemaphore(value: 0)
    session.uploadTask(with: request, from: body) { _, _, error in
        if let error { print(error) }
        answered.signal()
    }.resume()
    answered.wait()
    sleep(1)
}
