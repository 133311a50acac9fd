import Foundation
import StreamUpSystem
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system-call funnel: its rules driven by fake calls that set errno, and by real ones
/// (a signal interrupting a blocked `read(2)`, an empty non-blocking pipe, a missing file).
struct SystemCallTests {
    private typealias Call = SystemCall<SystemCallError>

    /// A call interrupted by signals is retried until it succeeds.
    @Test func interruptedCallIsRetried() throws {
        var attempts = 0
        let outcome = try Call.run("fake") { () -> Int in
            attempts += 1
            if attempts < 3 {
                Call.errno = EINTR
                return -1
            }
            return 42
        }
        #expect(outcome == .done(42))
        #expect(attempts == 3)
    }

    /// EAGAIN and EWOULDBLOCK are a value, not an error.
    @Test(arguments: [EAGAIN, EWOULDBLOCK])
    func wouldBlockIsReturnedAsAValue(code: CInt) throws {
        let outcome = try Call.run("fake") { () -> CInt in
            Call.errno = code
            return -1
        }
        #expect(outcome == .wouldBlock)
    }

    /// Any other errno is thrown with the operation's name.
    @Test func otherErrnoIsThrownNamingTheOperation() {
        #expect(throws: SystemCallError("connect", errno: ECONNREFUSED)) {
            _ = try Call.run("connect") { () -> CInt in
                Call.errno = ECONNREFUSED
                return -1
            }
        }
        let error = SystemCallError("connect", errno: ECONNREFUSED)
        #expect(error.description == "connect: \(String(cString: strerror(ECONNREFUSED))) (errno \(ECONNREFUSED))")
    }

    /// The blocking form treats "would block" as a failure.
    @Test func blockingFormThrowsOnWouldBlock() {
        #expect(throws: SystemCallError("send", errno: EAGAIN)) {
            _ = try Call.runBlocking("send") { () -> Int in
                Call.errno = EWOULDBLOCK
                return -1
            }
        }
    }

    /// The funnel throws the caller's error type, built from the failed call.
    @Test func failureIsTheCallersErrorType() {
        #expect(throws: ModuleError(text: "cannot open /x: errno \(EACCES)")) {
            _ = try SystemCall<ModuleError>.runBlocking("cannot open /x") { () -> CInt in
                SystemCall<ModuleError>.errno = EACCES
                return -1
            }
        }
    }

    /// EBADF can only mean a bug (a closed or reused descriptor): the process stops.
    @Test func badDescriptorTraps() async {
        await #expect(processExitsWith: .failure) {
            var byte: UInt8 = 0
            _ = try? SystemCall<SystemCallError>.run("read") { read(-1, &byte, 1) }
        }
    }

    /// A real `read(2)` on an empty non-blocking pipe: "would block" as a value, then the byte
    /// once one is written.
    @Test func emptyNonBlockingPipeWouldBlock() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer {
            Call.close(readEnd)
            Call.close(writeEnd)
        }
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var byte: UInt8 = 0
        #expect(try Call.run("read") { read(readEnd, &byte, 1) } == .wouldBlock)
        #expect(throws: SystemCallError("read", errno: EAGAIN)) {
            _ = try Call.runBlocking("read") { read(readEnd, &byte, 1) }
        }
        var sent: UInt8 = 7
        #expect(try Call.runBlocking("write") { write(writeEnd, &sent, 1) } == 1)
        #expect(try Call.run("read") { read(readEnd, &byte, 1) } == .done(1))
        #expect(byte == 7)
    }

    /// A real failure: `open(2)` of a missing file throws ENOENT named after the call.
    @Test func missingFileThrowsENOENT() {
        let path = "/nonexistent-\(getpid())/file"
        #expect(throws: SystemCallError("open", errno: ENOENT)) {
            _ = try Call.runBlocking("open") { Call.open(path, O_RDONLY | O_CLOEXEC) }
        }
    }

    /// A blocking `read(2)` interrupted by a signal (a handler installed without `SA_RESTART`)
    /// is run again and returns the byte written afterwards.
    @Test func readInterruptedBySignalIsRetried() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer {
            Call.close(readEnd)
            Call.close(writeEnd)
        }
        var action = sigaction()
        var previous = sigaction()
        #if canImport(Glibc)
        action.__sigaction_handler.sa_handler = { _ in }
        #else
        action.__sigaction_u.__sa_handler = { _ in }
        #endif
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a blocked read(2) fails with EINTR
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { _ = sigaction(SIGUSR1, &previous, nil) }

        let reader = BlockedReader()
        let thread = Thread { reader.run(readEnd) }
        thread.start()

        // Signal the reader until a second attempt shows that read(2) was interrupted and retried.
        let deadline = ContinuousClock.now + .seconds(10)
        while reader.attempts < 2, ContinuousClock.now < deadline {
            if let target = reader.thread { _ = pthread_kill(target, SIGUSR1) }
            _ = poll(nil, 0, 10)
        }
        #expect(reader.attempts >= 2)

        var sent: UInt8 = 9
        _ = try Call.runBlocking("write") { write(writeEnd, &sent, 1) }
        let answerDeadline = ContinuousClock.now + .seconds(10)
        while reader.result == nil, ContinuousClock.now < answerDeadline { _ = poll(nil, 0, 10) }
        #expect(reader.result == .done(1))
    }

    private func makePipe() throws(SystemCallError) -> (CInt, CInt) {
        var ends: [CInt] = [-1, -1]
        try Call.runBlocking("pipe") { pipe(&ends) }
        return (ends[0], ends[1])
    }
}

/// A module's own error, as the sink's and the library's are.
private struct ModuleError: Error, Equatable, SystemCallFailure {
    let text: String

    init(text: String) {
        self.text = text
    }

    init(systemCall failure: SystemCallError) {
        text = "\(failure.operation): errno \(failure.errno)"
    }
}

/// A thread blocked in `read(2)` through the funnel, counting the attempts.
///
/// Thread safety: guarded by the `state` mutex; callable from any thread.
private final class BlockedReader: Sendable {
    private struct State {
        var thread: pthread_t?
        var attempts = 0
        var result: SystemCall<SystemCallError>.Outcome<Int>?
    }

    private let state = Mutex(State())

    var thread: pthread_t? { state.withLock { $0.thread } }
    var attempts: Int { state.withLock { $0.attempts } }
    var result: SystemCall<SystemCallError>.Outcome<Int>? { state.withLock { $0.result } }

    func run(_ fd: CInt) {
        // The runner's threads may block signals; this one must take SIGUSR1.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGUSR1)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        state.withLock { $0.thread = pthread_self() }
        var byte: UInt8 = 0
        let outcome = try? SystemCall<SystemCallError>.run("read") { () -> Int in
            state.withLock { $0.attempts += 1 }
            return read(fd, &byte, 1)
        }
        state.withLock { $0.result = outcome }
    }
}
