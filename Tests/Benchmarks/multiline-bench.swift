// What deciding "does this line continue a record" costs per line (`MultilineMatcher`): a
// `--multiline start=REGEX` (Swift Regex) against the built-in rules that look at bytes.
// Built with the library's own matcher sources, optimised:
//
//     Tests/Benchmarks/multiline-bench.sh
//
// Prints CPU ns per line (best of 3) for each rule over 1,000,000 log lines (a third of them
// stack frames).
import Foundation

/// Stands in for the library's error type (the matcher sources only name it).
package struct StreamUpError: Error {
    package enum Code { case invalidConfiguration }
    package init(_ code: Code, _ message: String) {}
}

/// CPU time of the calling thread (other processes on a shared machine do not count).
func cpuNanoseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

@main enum MultilineBench {
    static func main() throws {
        var lines: [[UInt8]] = []
        for index in 0..<1_000_000 {
            switch index % 3 {
            case 0: lines.append(Array("2026-11-25T10:00:\(index % 60)Z INFO request \(index) served in 12 ms".utf8))
            case 1: lines.append(Array("\tat com.example.Service.call\(index)(Service.java:\(index % 900))".utf8))
            default: lines.append(Array("2026-11-25T10:00:\(index % 60)Z WARN user=\(index) slow query took 250 ms".utf8))
            }
        }
        let rules: [(String, MultilineRule.Kind)] = [
            ("indented (bytes)", .indented),
            ("java (bytes)", .java),
            ("start=^\\d{4}-\\d\\d-\\d\\d (Regex)", .start(#"^\d{4}-\d\d-\d\d"#)),
            ("start=ERROR|WARN (Regex, unanchored)", .start("ERROR|WARN")),
        ]
        for (name, kind) in rules {
            var best = Double.infinity
            var continued = 0
            for _ in 0..<3 {
                var matcher = MultilineMatcher(kind)
                continued = 0
                let start = cpuNanoseconds()
                for line in lines where line.withUnsafeBytes({ matcher.continues($0) }) { continued += 1 }
                best = min(best, cpuNanoseconds() - start)
            }
            print("\(name): \(String(format: "%.0f", best / Double(lines.count))) ns/line (\(continued) of \(lines.count) continue)")
        }
    }
}
