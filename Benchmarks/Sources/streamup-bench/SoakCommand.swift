import Foundation

/// `streamup-bench --soak requests|run|all [--quick] [--requests N] [--minutes M] [--pipelines P]
/// [--streamup PATH]`: the soak workloads, which measure what a process left running does to
/// its memory, descriptors and threads, and print a Markdown report on stdout.
///
/// Thread safety: runs on the main thread.
enum SoakCommand {
    static let flag = "--soak"

    static let usage = """
        usage: swift run -c release streamup-bench --soak requests|run|all [--quick] [--requests N]
                                                   [--minutes M] [--pipelines P] [--streamup PATH]

        The soak workloads: what a process left running does to its memory, open files and threads.
          requests   streamup --segment-bytes 4096 reading a pipe, then the bare URLSession program
                     sending the same requests one at a time: N requests each (default 100000),
                     resident memory, open files and threads sampled every second
          run        streamup run with P tail pipelines (default 20) for M minutes (default 30):
                     files growing at 1,000 lines/s in all and rotating every 90 s, a reload (SIGHUP)
                     every minute that takes the last pipeline out and puts it back, the receiver
                     down for 2 minutes a third of the way in; sampled every 10 s; every line must arrive
          all        both
          --rotate-seconds S, --reload-seconds S, --outage-seconds S
                     the run soak's rotation period, reload period and outage (a period longer than
                     the run: none)
          --quick    CI's smoke run: 2,000 requests; 3 pipelines for 12 s
        Exit status 3 when a run did not count (stalled, failed, lines missing).
        """

    static func run(_ arguments: [String]) -> Int32 {
        var remaining = arguments[...]
        guard let which = remaining.popFirst(), ["requests", "run", "all"].contains(which) else {
            Progress.error(usage)
            return 64
        }
        var requests = 100_000
        var settings = RunSoak.Settings()
        var streamup: String?
        var quick = false
        var minutes: Double?
        var pipelines: Int?
        var explicitRequests: Int?
        var tuning: [(WritableKeyPath<RunSoak.Settings, Double>, Double)] = []
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick": quick = true
            case "--requests": explicitRequests = remaining.popFirst().flatMap(Int.init)
            case "--minutes": minutes = remaining.popFirst().flatMap(Double.init)
            case "--pipelines": pipelines = remaining.popFirst().flatMap(Int.init)
            case "--streamup": streamup = remaining.popFirst()
            case "--rotate-seconds", "--reload-seconds", "--outage-seconds":
                guard let value = remaining.popFirst().flatMap(Double.init), value > 0 else {
                    Progress.error("\(argument) needs a number of seconds")
                    return 64
                }
                let path: WritableKeyPath<RunSoak.Settings, Double> =
                    argument == "--rotate-seconds" ? \.rotateSeconds : argument == "--reload-seconds" ? \.reloadSeconds : \.outageSeconds
                tuning.append((path, value))
            default:
                Progress.error("unknown argument '\(argument)'\n\(usage)")
                return 64
            }
        }
        if quick {
            requests = 2_000
            settings = .quick
        }
        if let explicitRequests { requests = explicitRequests }
        if let minutes { settings.seconds = minutes * 60 }
        if let pipelines { settings.pipelines = pipelines }
        for (path, value) in tuning { settings[keyPath: path] = value }
        guard requests > 0, settings.seconds > 0, settings.pipelines > 1 else {
            Progress.error("--requests, --minutes and --pipelines need positive numbers (at least 2 pipelines)")
            return 64
        }
        do {
            let binaries = try Binaries.locate(streamup: streamup)
            var report = "# streamup soak, \(ISO8601DateFormatter().string(from: Date()))\n\n"
            report += "Command: `streamup-bench --soak \(arguments.joined(separator: " "))`; streamup: `\(binaries.streamup)`.\n\n"
            var failed = false
            if which != "run" {
                let results = try RequestSoak.run(binaries: binaries, requests: requests, stallSeconds: 30)
                report += SoakReport.requests(results, planned: requests)
                failed = failed || results.contains { $0.failure != nil }
            }
            if which != "requests" {
                let result = try RunSoak.run(binaries: binaries, settings: settings)
                report += SoakReport.run(result)
                failed = failed || result.failure != nil
            }
            print(report)
            return failed ? 3 : 0
        } catch {
            Progress.error("\(error)")
            return 1
        }
    }
}
