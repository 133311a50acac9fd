import Foundation

/// How the bench runs Fluent Bit by hand: a configuration file in the run's temporary
/// directory, in the foreground, stopped with SIGTERM (after at most `Grace 1` s of flushing).
///
/// The configuration follows the file (or the wildcard) from its start with the `tail` input
/// (no offset database) and sends every line with the `http` output as JSON lines
/// (`{"date":…,"log":"…"}`), flushed every second (`Flush 1`, like streamup's 1 s segments).
/// It is Fluent Bit's cheapest setting measured for this workload (Benchmarks/RESULTS.md,
/// "Fluent Bit's best configuration"): the stat watcher (`Inotify_Watcher false`: an `fstat`
/// every 250 ms instead of reads on inotify events, 1/18 of the CPU), 512 KiB reads (one read
/// takes a tick's 250 KB at 1 MB/s; the default 32 KiB falls behind, p50 1.8 s) and no
/// `posix_fadvise` of the whole file before each read (`File_Cache_Advise Off`).
///
/// Thread safety: stateless.
enum FluentBitSetup {
    /// `path` is the file or the wildcard; `port` the receiver's on 127.0.0.1 (0 shows PORT).
    static func configuration(path: String, port: UInt16) -> String {
        let port = port == 0 ? "PORT" : String(port)
        return """
            [SERVICE]
                Flush        1
                Grace        1
                Log_Level    warn
                HTTP_Server  Off

            [INPUT]
                Name               tail
                Path               \(path)
                Read_from_Head     On
                Inotify_Watcher    false
                Buffer_Chunk_Size  512K
                Buffer_Max_Size    512K
                File_Cache_Advise  Off

            [OUTPUT]
                Name    http
                Match   *
                Host    127.0.0.1
                Port    \(port)
                URI     /
                Format  json_lines

            """
    }

    static func arguments(directory: String) -> [String] {
        ["-c", "\(directory)/fluent-bit.conf"]
    }

    /// Writes the configuration into `directory`.
    static func prepare(directory: String, path: String, port: UInt16) throws(BenchError) {
        let file = "\(directory)/fluent-bit.conf"
        do {
            try configuration(path: path, port: port).write(toFile: file, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(file): \(error)")
        }
    }
}
