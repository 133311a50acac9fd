#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import StreamUpSink

/// The syscall helper, driven by fake calls that set errno.
struct SyscallTests {
    /// A call interrupted by signals is retried until it succeeds.
    @Test func interruptedCallIsRetried() throws {
        var attempts = 0
        let outcome = try Syscall.run("fake") { () -> Int in
            attempts += 1
            if attempts < 3 {
                Syscall.setErrno(EINTR)
                return -1
            }
            return 42
        }
        #expect(outcome == .done(42))
        #expect(attempts == 3)
    }

    /// EAGAIN is a value, not an error.
    @Test func wouldBlockIsReturnedAsAValue() throws {
        let outcome = try Syscall.run("fake") { () -> CInt in
            Syscall.setErrno(EAGAIN)
            return -1
        }
        #expect(outcome == .wouldBlock)
    }

    /// Any other errno throws a SinkError naming the C function.
    @Test func otherErrnoThrowsSinkErrorNamingTheFunction() {
        #expect {
            _ = try Syscall.run("connect") { () -> CInt in
                Syscall.setErrno(ECONNREFUSED)
                return -1
            }
        } throws: { error in
            guard let error = error as? SinkError else { return false }
            return error.code == .systemCall && error.errno == ECONNREFUSED && error.operation == "connect"
                && error.description == "system call failed: connect: Connection refused (errno \(ECONNREFUSED))"
        }
    }

    /// The blocking form treats EAGAIN as a failure.
    @Test func blockingFormThrowsOnWouldBlock() {
        #expect(throws: SinkError.systemCall("send", errno: EAGAIN)) {
            _ = try Syscall.runBlocking("send") { () -> Int in
                Syscall.setErrno(EWOULDBLOCK)
                return -1
            }
        }
    }
}
