import Foundation
import StreamUpTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the built `streamup` with a private CA trusted the way README says (copied to
/// `/usr/local/share/ca-certificates/NAME.crt`, then `update-ca-certificates`), without touching
/// the machine's trust store: inside a private mount namespace (`unshare --mount`, root only),
/// `/etc/ssl/certs` and `/usr/local/share/ca-certificates` are bind-mounted over by copies in a
/// temporary directory, and the tool runs there with no hooks (Debian's Java keystore hook would
/// otherwise process dpkg triggers on the real system). The namespace, and with it every change,
/// ends with the process: nothing needs undoing, even when a test is killed. The runs happen
/// one after another inside one namespace, their stdin, stdout and stderr in files.
///
/// Thread safety: stateless.
enum TrustStoreSandbox {
    /// Whether this machine can do it: root, `unshare`, `update-ca-certificates`, and mount
    /// namespaces allowed (a container may forbid them).
    static let isAvailable: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            FileManager.default.isExecutableFile(atPath: "/usr/sbin/update-ca-certificates")
        else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = ["--mount", "--propagation", "private", "/bin/true"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    /// What one run of streamup inside the sandbox did.
    ///
    /// Thread safety: a value type.
    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    private static let script = #"""
        set -e
        work=$1; ca=$2
        mkdir -p "$work/certs" "$work/local" "$work/no-hooks"
        cp -a /etc/ssl/certs/. "$work/certs/"
        cp -a /usr/local/share/ca-certificates/. "$work/local/"
        mount --bind "$work/certs" /etc/ssl/certs
        mount --bind "$work/local" /usr/local/share/ca-certificates
        cp "$ca" /usr/local/share/ca-certificates/streamup-test.crt
        update-ca-certificates --hooksdir "$work/no-hooks" >/dev/null 2>&1
        set +e
        . "$work/runs.sh"
        """#

    /// Runs the built `streamup` once per entry of `runs` (its arguments and its whole stdin),
    /// one after another, with `caCertificate` trusted in their namespace only; the trust store
    /// is set up once for all of them.
    static func streamup(trusting caCertificate: String, runs: [(arguments: [String], input: String)], work: URL) async throws -> [Run] {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        var lines: [String] = []
        for (index, run) in runs.enumerated() {
            let input = work.appendingPathComponent("in-\(index)")
            try Data(run.input.utf8).write(to: input)
            let words = ([StreamupProcess.executable.path] + run.arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
            let output = work.appendingPathComponent("run-\(index)").path
            lines.append("\(words.joined(separator: " ")) < '\(input.path)' > '\(output).out' 2> '\(output).err'; echo $? > '\(output).status'")
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: work.appendingPathComponent("runs.sh"))
        let child = try StreamupProcess(
            executable: URL(fileURLWithPath: "/usr/bin/unshare"),
            ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", work.path, caCertificate])
        child.closeStdin()
        guard await child.waitForExit(timeout: 120) == 0 else {
            throw TLSServerError(message: "the trust-store sandbox failed: \(child.stderr)")
        }
        return try runs.indices.map { index in
            let output = work.appendingPathComponent("run-\(index)").path
            let status = try String(contentsOfFile: output + ".status", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            return Run(
                status: Int32(status) ?? -1, stdout: try String(contentsOfFile: output + ".out", encoding: .utf8),
                stderr: try String(contentsOfFile: output + ".err", encoding: .utf8))
        }
    }
}
