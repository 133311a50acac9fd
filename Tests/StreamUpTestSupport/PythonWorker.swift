import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Python programs run by interpreters that stay up for the whole test run, so a check that
/// runs Python (Python's `json`, `gzip` and `zlib` as decoders independent of ours, a
/// scrape's parser) does not pay for starting one: about 0.3 s a start on a loaded 2-core
/// machine, paid hundreds of times a run.
///
/// Each worker is `python3 -c` with a loop that reads one request (a JSON line with the program,
/// its arguments and its stdin's length, then those bytes) and answers one (a JSON line with
/// the exit status and the lengths of stdout and stderr, then their bytes). A program runs
/// as `python3 -c PROGRAM ARGUMENTS…` would run it: `__name__` is `"__main__"`, `sys.argv`
/// is `["-c", ARGUMENTS…]`, `sys.stdin` and `sys.stdout` are the bytes given and taken (with
/// the text encoding a fresh interpreter would use), `sys.exit(n)` is status `n`, an uncaught
/// exception prints its traceback and is status 1. Each program gets fresh globals; modules
/// it imports stay imported for the next (that is the saving). A worker exits when its stdin
/// ends: the test runner holds the other end, so no worker outlives the run.
///
/// A call takes an idle worker or starts one, so calls from several threads run side by side.
/// A worker that fails (it died, it answered something else) is dropped, and the program runs
/// in a `python3` of its own instead.
///
/// Thread safety: the idle workers are guarded by `idle`'s lock; a worker is used by one call
/// at a time.
enum PythonWorker {
    private static let idle = Locked<[Worker]>([])
    /// Whether a failed worker was reported (once a run is enough).
    private static let warned = Locked(false)

    /// Runs `program` with `arguments` in `sys.argv[1:]` and `input` on its stdin; throws when
    /// no worker could run it (the caller runs it in a `python3` of its own).
    static func run(_ program: String, _ arguments: [String], input: [UInt8]) throws -> ExternalTool.Result {
        let worker = try idle.withLock { $0.popLast() } ?? Worker()
        guard let result = worker.run(program, arguments, input: input) else {
            worker.end()
            let first = warned.withLock { seen in
                defer { seen = true }
                return !seen
            }
            if first {
                print("note: a Python worker stopped answering; its program runs in a python3 of its own (slower, same result)")
            }
            throw WorkerFailed()
        }
        idle.withLock { $0.append(worker) }
        return result
    }

    /// A worker did not answer as it should.
    ///
    /// Thread safety: a value type.
    struct WorkerFailed: Error {}

    /// One interpreter and the pipes to it.
    ///
    /// Thread safety: used by one call at a time (it is either in `idle` or held by a call).
    private final class Worker: @unchecked Sendable {
        private let process = Process()
        private let requests = Pipe()
        private let answers = Pipe()
        private var buffered: [UInt8] = []

        init() throws {
            POSIXCalls.ignoreSIGPIPE()  // a worker that died must not kill the test runner
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", PythonWorker.loop]
            process.standardInput = requests
            process.standardOutput = answers
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// The program's result, or nil when the worker failed.
        func run(_ program: String, _ arguments: [String], input: [UInt8]) -> ExternalTool.Result? {
            let head: [String: Any] = ["program": program, "args": arguments, "input": input.count]
            guard let line = try? JSONSerialization.data(withJSONObject: head) else { return nil }
            do {
                try requests.fileHandleForWriting.write(contentsOf: line + Data([0x0A]) + Data(input))
            } catch {
                return nil
            }
            guard let answer = readLine(),
                let object = try? JSONSerialization.jsonObject(with: Data(answer)) as? [String: Int],
                let status = object["status"], let outputCount = object["stdout"], let errorCount = object["stderr"],
                let output = read(outputCount), let errors = read(errorCount)
            else { return nil }
            return ExternalTool.Result(status: Int32(truncatingIfNeeded: status), output: output, errorText: String(decoding: errors, as: UTF8.self))
        }

        /// The next line the worker wrote, without its newline; nil at its end.
        private func readLine() -> [UInt8]? {
            var scanned = 0
            while true {
                if let end = buffered[scanned...].firstIndex(of: 0x0A) {
                    let line = Array(buffered[..<end])
                    buffered.removeSubrange(...end)
                    return line
                }
                scanned = buffered.count
                guard fill() else { return nil }
            }
        }

        /// The next `count` bytes the worker wrote; nil at its end.
        private func read(_ count: Int) -> [UInt8]? {
            while buffered.count < count {
                guard fill() else { return nil }
            }
            let bytes = Array(buffered[..<count])
            buffered.removeSubrange(..<count)
            return bytes
        }

        /// Appends what the worker wrote next; false at its end.
        private func fill() -> Bool {
            let chunk = answers.fileHandleForReading.availableData
            buffered += chunk
            return !chunk.isEmpty
        }

        /// Ends the interpreter and reaps it.
        func end() {
            try? requests.fileHandleForWriting.close()
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// The worker's loop. Answers go to a copy of the original stdout; descriptor 1 itself is
    /// pointed at /dev/null, so nothing a program writes past `sys.stdout` can break a line.
    static let loop = #"""
        import io, json, os, sys, traceback
        requests = sys.stdin.buffer
        answers = os.fdopen(os.dup(1), "wb")
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        encoding, errors = sys.stdout.encoding, sys.stdout.errors
        real = (sys.stdin, sys.stdout, sys.stderr, list(sys.argv))
        while True:
            line = requests.readline()
            if not line:
                break
            request = json.loads(line)
            data = requests.read(request["input"])
            out, err = io.BytesIO(), io.BytesIO()
            sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors=errors)
            sys.stdout = io.TextIOWrapper(out, encoding=encoding, errors=errors, write_through=True)
            sys.stderr = io.TextIOWrapper(err, encoding=encoding, errors="backslashreplace", write_through=True)
            sys.argv = ["-c"] + request["args"]
            status = 0
            try:
                exec(compile(request["program"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
            except SystemExit as e:
                if e.code is None:
                    status = 0
                elif isinstance(e.code, int):
                    status = e.code
                else:
                    print(e.code, file=sys.stderr)
                    status = 1
            except BaseException:
                traceback.print_exc()
                status = 1
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            # (Read before the wrappers go: a wrapper that is collected closes its buffer.)
            output, problems = out.getvalue(), err.getvalue()
            sys.stdin, sys.stdout, sys.stderr, sys.argv = real[0], real[1], real[2], list(real[3])
            answers.write(json.dumps({"status": status, "stdout": len(output), "stderr": len(problems)}).encode() + b"\n")
            answers.write(output)
            answers.write(problems)
            answers.flush()
        """#
}
