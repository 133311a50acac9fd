import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command's result goes when printing it is the point of the command: the help
/// text, the version, a dry run's summary, the body of a 2xx answer. Stdout, or the file
/// given with `-o FILE`. A result that cannot be written fails the command with
/// ``ExitStatus/ioFailure`` and one line on stderr saying what was lost.
///
/// Thread safety: stateless; callable from any thread.
enum ResultOutput {
    /// Writes `bytes` to stdout, or to `file` (created or truncated). `what` names the result
    /// for the error line ("the help text", "the server's answer (200 OK)"). Returns
    /// ``ExitStatus/success`` or, after saying why on stderr, ``ExitStatus/ioFailure``.
    static func write(_ bytes: some Collection<UInt8>, what: String, to file: String? = nil) -> Int32 {
        let bytes = Array(bytes)
        guard let file else {
            let errno: Int32
            switch bytes.withUnsafeBytes({ Output.standardOutput.write($0) }) {
            case .written: return ExitStatus.success
            case .failed(let failure): errno = failure
            case .failedBefore: errno = Output.standardOutput.failedErrno ?? EBADF
            }
            Terminal.error("cannot write \(what) to stdout: \(Output.standardOutput.words(for: errno))")
            return ExitStatus.ioFailure
        }
        if let errno = writeFile(file, bytes) {
            Terminal.error("cannot write \(what) to \(file): \(String(cString: strerror(errno)))")
            return ExitStatus.ioFailure
        }
        return ExitStatus.success
    }

    /// Writes a text result and a line break.
    static func writeLine(_ text: String, what: String, to file: String? = nil) -> Int32 {
        write(Array((text + "\n").utf8), what: what, to: file)
    }

    /// Creates or truncates `path` and writes `bytes` (no temporary file and rename, so
    /// `/dev/stderr` or a FIFO work too). Returns nil, or the errno of the step that failed.
    static func writeFile(_ path: String, _ bytes: [UInt8]) -> Int32? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { return errno }
        let failed = bytes.withUnsafeBytes { DescriptorWriter.system.writeAll(fd, $0) }
        // close(2) can report a failed write-back (NFS, a full disk); it is not retried on EINTR.
        let closed = close(fd) == 0 ? nil : errno
        return failed ?? closed
    }

    /// Why `path` cannot take a result, if that can be told before anything is sent: its
    /// directory is missing or not writable, or it exists and is not writable. Nothing is
    /// created.
    static func problem(writing path: String) -> String? {
        let url = URL(fileURLWithPath: path)
        if access(path, F_OK) == 0 {
            return access(path, W_OK) == 0 ? nil : "'\(path)' is not writable"
        }
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "the directory of '\(path)' does not exist"
        }
        return access(directory, W_OK) == 0 ? nil : "the directory of '\(path)' is not writable"
    }
}
