import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child started with `posix_spawn(2)`, reaped with `wait4(2)` so its `rusage` is available
/// (Foundation's `Process` does not expose it).
///
/// Measured children (``spawn(_:_:stdin:stdout:stderr:name:measuredBy:)`` with GNU time's
/// path) run as `time -o REPORT -f 'rusage %U %S %M' PROGRAM …`, and their ``ChildExit``
/// is what GNU time saw. The reason: a process started by this one keeps this one's peak RSS
/// as its own `ru_maxrss`. On `execve`, Linux records the old address space's high-water mark
/// in the process's `maxrss` (fs/exec.c, `exec_mmap`), and a child made by `posix_spawn`
/// (`vfork`) or `fork` starts from the bench's memory: every child of a bench that holds
/// 80 MiB would report at least 80 MiB. GNU time is small (about 1.5 MiB), so the program it
/// forks starts clean. ``pid`` is then the program's own pid (found as GNU time's child), so
/// signals and `/proc` reads reach the program.
///
/// Descriptors: every descriptor the bench opens is close-on-exec, so the child gets only the
/// three it is given; in particular it never holds the write end of its own stdin pipe.
///
/// Thread safety: immutable after spawning; ``signal(_:)`` is callable from any thread, and
/// ``wait(stalled:)`` must be called exactly once.
final class ChildProcess: Sendable {
    /// The program's pid: GNU time's child for a measured child (GNU time's own pid if the
    /// program could not be found in time).
    let pid: pid_t
    /// The process the bench waits for: `pid`, or GNU time's.
    private let spawned: pid_t
    /// GNU time's report file, for a measured child.
    private let report: String?
    /// ``MonotonicClock`` time taken just before `posix_spawn`.
    let startNanos: UInt64
    let commandLine: String
    /// A short name for messages (by default the program's file name).
    let name: String

    private init(pid: pid_t, spawned: pid_t, report: String?, startNanos: UInt64, commandLine: String, name: String) {
        self.pid = pid
        self.spawned = spawned
        self.report = report
        self.startNanos = startNanos
        self.commandLine = commandLine
        self.name = name
    }

    /// Starts `path` with `arguments` (without argv[0]) and the given standard streams; with
    /// `measuredBy` (GNU time's path), through GNU time (see the type's doc).
    static func spawn(
        _ path: String, _ arguments: [String],
        stdin: ChildStream = .file("/dev/null"), stdout: ChildStream = .file("/dev/null"), stderr: ChildStream = .inherit,
        name: String? = nil, measuredBy time: String? = nil
    ) throws(BenchError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(CInt(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit:
                break
            case .descriptor(let fd):
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .file(let file):
                let flags = target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                posix_spawn_file_actions_addopen(&actions, target, file, flags, 0o644)
            }
        }
        let report = time.map { _ in NSTemporaryDirectory() + "streamup-bench-\(getpid())-rusage-\(reportNumber.next())" }
        var program = [path] + arguments
        if let time, let report {
            program = [time, "-o", report, "-f", RusageReport.format] + program
        }
        let argv = program.map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in environment { free(pointer) }
        }
        var spawned: pid_t = 0
        let start = MonotonicClock.now()
        let result = posix_spawn(&spawned, program[0], &actions, nil, argv, environment)
        guard result == 0 else { throw BenchError.system("cannot start \(program[0])", errno: result) }
        var pid = spawned
        if report != nil {
            // GNU time forks at once; wait (briefly) for its child to appear.
            let deadline = MonotonicClock.now() + 2_000_000_000
            while MonotonicClock.now() < deadline {
                if let child = ProcFiles.child(of: spawned) {
                    pid = child
                    break
                }
                MonotonicClock.sleep(seconds: 0.0005)
            }
        }
        return ChildProcess(
            pid: pid, spawned: spawned, report: report, startNanos: start,
            commandLine: ([path] + arguments).joined(separator: " "),
            name: name ?? String(path.split(separator: "/").last ?? Substring(path)))
    }

    /// Sends `signal` to the program. Call it only before ``wait(stalled:)`` has returned:
    /// after that the pid may belong to another process.
    func signal(_ signal: CInt) {
        kill(pid, signal)
    }

    /// Waits for the child to end. `stalled` is asked every 100 ms; once it returns true the
    /// program is killed with SIGKILL (and the result says so).
    func wait(stalled: @escaping () -> Bool = { false }) -> (exit: ChildExit, killed: Bool) {
        let waiter = ExitWaiter(pid: spawned)
        var killed = false
        while true {
            if let exit = waiter.result(waitingSeconds: 0.1) {
                guard let report else { return (exit, killed) }
                defer { unlink(report) }
                return (RusageReport.read(report, timeExit: exit) ?? exit, killed)
            }
            if !killed && stalled() {
                killed = true
                kill(pid, SIGKILL)
            }
        }
    }

    /// Numbers GNU time's report files within this bench process.
    private static let reportNumber = Counter()
}

/// A counter shared by every thread.
///
/// Thread safety: the value is behind a `LockedValue`'s mutex.
final class Counter: Sendable {
    private let value = LockedValue(0)

    func next() -> Int {
        value.update { value in
            value += 1
            return value
        }
    }
}
