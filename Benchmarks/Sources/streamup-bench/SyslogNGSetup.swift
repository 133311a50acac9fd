import Foundation

/// How the bench runs syslog-ng by hand (never as a system service): a configuration file,
/// persist file, pid file and control socket of its own in the run's temporary directory, in
/// the foreground (`-F`), stopped with SIGTERM.
///
/// The configuration follows the log file from its start (or, for many files, every `*.log` in
/// a directory with `wildcard-file()`) and ships every line, unparsed, in batches of 1,000
/// lines to the receiver:
/// - `file(… flags(no-parse))`: each line is the message as it is;
/// - `log-iw-size(10000)`: the source's window; with flow control, the default of 100 would cap
///   every batch at 100 lines;
/// - `http(… batch-lines(1000) batch-timeout(1000) body("${MSG}"))`: one `POST` per 1,000 lines
///   (or after 1 s), the lines joined with `\n`;
/// - `flags(flow-control)`: the source waits for the destination instead of dropping lines
///   when its queue is full.
///
/// Thread safety: stateless.
enum SyslogNGSetup {
    /// With `files` of 1, `file` is the file; with more, the directory of `*.log` files.
    static func configuration(version: String, file: String, files: Int = 1, url: String) -> String {
        let source =
            files == 1
            ? "file(\"\(file)\" flags(no-parse) log-iw-size(10000) log-fetch-limit(1000))"
            : "wildcard-file(base-dir(\"\(file)\") filename-pattern(\"*.log\") recursive(no) max-files(\(files)) flags(no-parse) log-iw-size(\(files * 1_000)) log-fetch-limit(1000))"
        return """
            @version: \(version)
            source s_app { \(source); };
            destination d_sink { http(url("\(url)") method("POST") batch-lines(1000) batch-timeout(1000) body("${MSG}")); };
            log { source(s_app); destination(d_sink); flags(flow-control); };

            """
    }

    static func arguments(directory: String) -> [String] {
        [
            "-F", "--no-caps", "-f", "\(directory)/syslog-ng.conf", "-R", "\(directory)/syslog-ng.persist",
            "-p", "\(directory)/syslog-ng.pid", "-c", "\(directory)/syslog-ng.ctl",
        ]
    }

    /// Writes the configuration into `directory`.
    static func prepare(directory: String, version: String, file: String, files: Int, url: String) throws(BenchError) {
        let path = "\(directory)/syslog-ng.conf"
        do {
            try configuration(version: version, file: file, files: files, url: url).write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(path): \(error)")
        }
    }
}
