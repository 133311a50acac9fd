import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#endif
#if os(Linux)
import CStreamUpSystem
#endif

/// Starts a child (the heartbeat's job, journalctl) so that it does not outlive streamup, even
/// when streamup is killed outright (`kill -9`, the OOM killer): the child gets SIGTERM then,
/// as a stop would pass on, instead of running on orphaned.
///
/// How (Linux): the child is streamup itself, run with a hidden first argument. Before anything
/// else, `main` hands it to ``execIfAsked()``, which asks the kernel for SIGTERM when its parent
/// ends (`prctl(PR_SET_PDEATHSIG)` through CStreamUpSystem, kept across `execve` except into
/// set-user-ID programs), exits if the parent has already ended, sets the open-files soft
/// limit back to what streamup was started with, and `execvp`s the command. The pid streamup holds is
/// then the command's, with the same arguments, environment, descriptors and signal state:
/// what the command's status, output and the signals passed on to it do is unchanged.
///
/// Why one thread starts every child: the kernel sends the death signal when the *thread* that
/// started the child ends. `Process.run()` spawns from the calling thread, and a task's pool
/// thread ends after a few idle seconds, which would stop a job streamup still watches.
/// ``spawner`` lives as long as streamup.
///
/// Thread safety: ``run(_:executable:arguments:)`` may be called from any thread; the spawns
/// happen one at a time on ``spawner``'s thread.
enum ExecShim {
    /// The hidden first argument; the parent's pid and the command follow it.
    static let marker = "--streamup-internal-exec-with-parent-death-signal"

    /// Runs `executable` with `arguments` as `process`, through the shim where the system has a
    /// death signal. Configure the rest of `process` (environment, descriptors, handler) first.
    static func run(_ process: Process, executable: String, arguments: [String]) throws {
        #if os(Linux)
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        let limit = DescriptorLimit.startedSoftLimit.map { "/\($0)" } ?? ""
        process.arguments = [marker, "\(getpid())\(limit)", executable] + arguments
        try spawner.run(process)
        #else
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        #endif
    }

    /// In the child: when started as the shim, sets the death signal and becomes the command;
    /// returns at once otherwise. Call first thing in `main`.
    static func execIfAsked() {
        #if os(Linux)
        let arguments = CommandLine.arguments
        // The parent's pid, and the open-files soft limit it was started with: `PID/LIMIT`.
        let parentWords = arguments.count >= 4 ? arguments[2].split(separator: "/") : []
        guard arguments.count >= 4, arguments[1] == marker, let parent = parentWords.first.flatMap({ pid_t($0) }) else { return }
        let startedSoftLimit = parentWords.count > 1 ? UInt64(parentWords[1]) : nil
        let command = Array(arguments[3...])
        guard streamup_set_parent_death_signal(SIGTERM) == 0 else {
            fail(command, "cannot ask for a signal when streamup ends: \(String(cString: strerror(errno)))")
        }
        // Started by a streamup that has ended meanwhile: the death signal will never come.
        guard getppid() == parent else { _exit(128 + SIGTERM) }
        // The command gets the open-files limit streamup was started with, not the one it
        // raised for itself: a program that uses select(2) breaks past 1,024.
        if let soft = startedSoftLimit { DescriptorLimit.restore(softLimit: soft) }
        let argv = command.map { strdup($0) } + [nil]
        execvp(command[0], argv)
        fail(command, String(cString: strerror(errno)))
        #endif
    }

    /// One line on stderr, as `Process.run()` failing would have given, and 127 (the shell's
    /// "cannot run").
    private static func fail(_ command: [String], _ reason: String) -> Never {
        let line = "streamup: cannot run '\(command[0])': \(reason)\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        _exit(127)
    }

    #if os(Linux)
    private static let spawner = Spawner()
    #endif
}

#if os(Linux)
/// A thread that lives as long as streamup and runs `Process.run()` for the others (see
/// ``ExecShim``).
///
/// Thread safety: `requests` is guarded by its `Mutex`; each request runs on the thread.
private final class Spawner: Sendable {
    private let requests = Mutex<[@Sendable () -> Void]>([])
    private let waiting = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [requests, waiting] in
            while true {
                waiting.wait()
                requests.withLock { $0.removeFirst() }()
            }
        }
        thread.start()
    }

    /// Runs `process` on the thread; returns once it has started, or throws why not.
    func run(_ process: Process) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Void, any Error>>(.success(()))
        requests.withLock {
            $0.append {
                outcome.withLock { $0 = Result { try process.run() } }
                done.signal()
            }
        }
        waiting.signal()
        done.wait()
        try outcome.withLock { $0 }.get()
    }
}
#endif
