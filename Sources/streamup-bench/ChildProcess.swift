#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// How a child ended and what it cost, as `wait4(2)` reports it.
///
/// Thread safety: an immutable value; safe to send anywhere.
struct ChildExit: Sendable {
    /// The exit code, or `-signal` when a signal ended the child.
    let status: Int32
    /// User CPU seconds of the child (all its threads).
    let userSeconds: Double
    /// System CPU seconds of the child.
    let systemSeconds: Double
    /// Peak resident set size in KiB (`ru_maxrss`).
    let maxRSSKiB: Int
    /// ``MonotonicClock`` time at which `wait4` returned.
    let endNanos: UInt64

    var cpuSeconds: Double { userSeconds + systemSeconds }
    var succeeded: Bool { status == 0 }
}

/// Where one of a child's standard descriptors comes from.
///
/// Thread safety: an immutable value.
enum ChildStream: Sendable {
    /// Inherit the bench's descriptor.
    case inherit
    /// Duplicate this descriptor of the bench (which keeps its own copy).
    case descriptor(CInt)
    /// Open this path (write-only, created and truncated for output).
    case file(String)
}

/// A child started with `posix_spawn(2)`, reaped with `wait4(2)` so its `rusage` is available
/// (Foundation's `Process` does not expose it).
///
/// Descriptors: every descriptor the bench opens is close-on-exec, so the child gets only the
/// three it is given; in particular it never holds the write end of its own stdin pipe.
///
/// Thread safety: immutable after spawning; ``signal(_:)`` is callable from any thread, and
/// ``wait(stalled:)`` must be called exactly once.
final class ChildProcess: Sendable {
    let pid: pid_t
    /// ``MonotonicClock`` time taken just before `posix_spawn`.
    let startNanos: UInt64
    let commandLine: String

    private init(pid: pid_t, startNanos: UInt64, commandLine: String) {
        self.pid = pid
        self.startNanos = startNanos
        self.commandLine = commandLine
    }

    /// Starts `path` with `arguments` (without argv[0]) and the given standard streams.
    static func spawn(
        _ path: String, _ arguments: [String],
        stdin: ChildStream = .file("/dev/null"), stdout: ChildStream = .file("/dev/null"), stderr: ChildStream = .inherit
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
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in environment { free(pointer) }
        }
        var pid: pid_t = 0
        let start = MonotonicClock.now()
        let result = posix_spawn(&pid, path, &actions, nil, argv, environment)
        guard result == 0 else { throw BenchError.system("cannot start \(path)", errno: result) }
        return ChildProcess(pid: pid, startNanos: start, commandLine: ([path] + arguments).joined(separator: " "))
    }

    /// Sends `signal` to the child. Call it only before ``wait(stalled:)`` has returned: after
    /// that the pid may belong to another process.
    func signal(_ signal: CInt) {
        kill(pid, signal)
    }

    /// Waits for the child to end. `stalled` is asked every 100 ms; once it returns true the
    /// child is killed with SIGKILL (and the result says so).
    func wait(stalled: @escaping () -> Bool = { false }) -> (exit: ChildExit, killed: Bool) {
        let waiter = ExitWaiter(pid: pid)
        var killed = false
        while true {
            if let exit = waiter.result(waitingSeconds: 0.1) { return (exit, killed) }
            if !killed && stalled() {
                killed = true
                kill(pid, SIGKILL)
            }
        }
    }
}

/// Blocks in `wait4(2)` on a thread of its own, so the caller can watch the clock meanwhile.
///
/// Thread safety: the result is handed over through a semaphore and a mutex-guarded slot.
private final class ExitWaiter: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let slot = LockedValue<ChildExit?>(nil)

    init(pid: pid_t) {
        let done = self.done
        let slot = self.slot
        let thread = Thread {
            var status: CInt = 0
            var usage = rusage()
            while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
            let end = MonotonicClock.now()
            let signal = status & 0x7f
            let code: Int32 = signal == 0 ? (status >> 8) & 0xff : -signal
            slot.set(ChildExit(
                status: code,
                userSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
                systemSeconds: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
                maxRSSKiB: Int(usage.ru_maxrss),
                endNanos: end))
            done.signal()
        }
        thread.name = "bench.wait4"
        thread.start()
    }

    /// The exit, or nil if the child is still running after `waitingSeconds`.
    func result(waitingSeconds: Double) -> ChildExit? {
        guard done.wait(timeout: .now() + waitingSeconds) == .success else { return nil }
        return slot.get()
    }
}
