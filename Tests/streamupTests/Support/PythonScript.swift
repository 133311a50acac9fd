import Foundation
import StreamUpTestSupport

/// Starts a Python program from `Tests/Receivers` (a receiver validator, the ClickHouse harness)
/// as a child that SIGTERM can stop.
///
/// A child started from one of the test runner's threads inherits their blocked signals
/// (libdispatch blocks them in its threads; Foundation's Process does not reset the mask), so a
/// Python server that installs a SIGTERM handler never sees the signal: the test's wait for
/// its exit ran into its 60 s time limit and left the server running (measured: every
/// ClickHouse test took 60 s more and left a clickhouse-server behind). The launcher unblocks
/// the signals first. It also closes pipes it inherited by accident: Process closes the
/// runner's other descriptors in the child, but a pipe another test creates while this child
/// starts can slip through, and a test waits for its own child's output to end. (Not sockets:
/// one of them is Process's own watch on this child.)
///
/// Thread safety: stateless.
enum PythonScript {
    /// `Tests/Receivers/NAME`.
    static func path(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Receivers/\(name)").path
    }

    private static let launcher = #"""
        import os, runpy, signal, stat, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
            try:
                if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.close(fd)
            except OSError:
                pass
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        """#

    /// Runs a Python program given as text to its end, on a thread of its own (never one of
    /// the few threads the tests running in parallel share), in an interpreter that stays up
    /// between programs (``ExternalTool/python(_:_:input:)``); returns its status, stdout and
    /// stderr.
    static func run(_ program: String, _ arguments: [String]) async throws -> (status: Int32, output: Data, errors: Data) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        let result = try ExternalTool.python(program, arguments)
                        return (result.status, Data(result.output), Data(result.errorText.utf8))
                    })
            }
        }
    }

    /// Starts `python3 Tests/Receivers/NAME arguments…` (wait for its first stdout line before
    /// signalling it: `python3` may be a shim that is not the program yet).
    static func start(_ name: String, _ arguments: [String]) throws -> StreamupProcess {
        try StreamupProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", launcher, path(name)] + arguments)
    }
}
