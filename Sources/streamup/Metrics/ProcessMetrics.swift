import Foundation
import StreamUp
import StreamUpSystem

/// What a Prometheus user expects of any agent beside its own series: `streamup_build_info`
/// and the standard process metrics (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_start_time_seconds`), read from `/proc/self` at each scrape as
/// the Prometheus client libraries do. Where a file cannot be read its series is left out.
///
/// Thread safety: stateless but for ``startTime``, set once at start.
enum ProcessMetrics {
    /// When the process started (Unix time), noted first thing in `main`.
    static let startTime = Date().timeIntervalSince1970

    /// The build and process families, read now.
    static func families() -> [MetricFamily] {
        var families: [MetricFamily] = [
            .gauge(
                "streamup_build_info", "Always 1: the version of the running streamup in its label.", "1",
                labels: [MetricFamily.Label(name: "version", value: StreamUpVersion.current)])
        ]
        if let (cpu, virtual, resident) = statistics() {
            families.append(
                MetricFamily(
                    name: "process_cpu_seconds_total", kind: .counter, help: "Total user and system CPU time spent in seconds.",
                    samples: [MetricFamily.Sample(value: String(format: "%.2f", cpu))]))
            families.append(.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", "\(virtual)"))
            families.append(.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "\(resident)"))
        }
        if let open = DescriptorLimit.openCount {
            families.append(.gauge("process_open_fds", "Number of open file descriptors.", "\(open)"))
        }
        let soft = DescriptorLimit.current.soft
        if soft != UInt64.max { families.append(.gauge("process_max_fds", "Maximum number of open file descriptors.", "\(soft)")) }
        families.append(.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", String(format: "%.2f", startTime)))
        return families
    }

    /// CPU seconds (user + system), virtual and resident bytes, from `/proc/self/stat` (fields
    /// 14, 15, 23 and 24 of proc(5)).
    private static func statistics() -> (cpu: Double, virtual: Int, resident: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: field 3 (state) onwards.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 21, let user = Double(fields[11]), let system = Double(fields[12]), let virtual = Int(fields[20]),
            let pages = Int(fields[21])
        else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        return ((user + system) / ticks, virtual, pages * pageSize)
    }
}
