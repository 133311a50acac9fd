import StreamUpSystem
import Testing

@testable import streamup

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ``Output`` and ``DescriptorWriter`` against a scripted `write(2)`: interrupted, short and
/// failed writes.
@Suite struct OutputTests {
    /// A `write(2)` that answers from a script: a byte count to take, or an errno to fail with.
    /// Records every byte it took.
    ///
    /// Thread safety: `state` is a `Mutex`; callable from any thread.
    final class ScriptedWrite: Sendable {
        enum Step: Sendable {
            case take(Int)
            case fail(Int32)
        }
        private let state: Mutex<(steps: [Step], taken: [UInt8], calls: Int)>
        init(_ steps: [Step]) { state = Mutex((steps, [], 0)) }
        var taken: [UInt8] { state.withLock { $0.taken } }
        var calls: Int { state.withLock { $0.calls } }

        var writer: DescriptorWriter {
            DescriptorWriter(
                write: { _, bytes in
                    self.state.withLock { state in
                        state.calls += 1
                        let step = state.steps.isEmpty ? .take(Int.max) : state.steps.removeFirst()
                        switch step {
                        case .take(let most):
                            let count = min(most, bytes.count)
                            state.taken += bytes.prefix(count)
                            return (count, 0)
                        case .fail(let errno):
                            return (-1, errno)
                        }
                    }
                },
                waitWritable: { _ in })
        }
    }

    /// Short writes continue where they stopped, EINTR and EAGAIN are retried: every byte
    /// arrives once, in order.
    @Test func shortAndInterruptedWritesDeliverEveryByteOnce() {
        let script = ScriptedWrite([.take(3), .fail(EINTR), .take(0), .fail(EAGAIN), .take(4)])
        let output = Output(fileDescriptor: 1, name: "stdout", syscalls: script.writer)
        #expect(output.write("hello, world\n") == .written)
        #expect(String(decoding: script.taken, as: UTF8.self) == "hello, world\n")
    }

    /// The first failure is reported by the write that met it; later writes do nothing and
    /// say the stream failed before.
    @Test func firstFailureIsReportedOnceThenWritesStop() {
        let script = ScriptedWrite([.take(2), .fail(EPIPE)])
        let output = Output(fileDescriptor: 2, name: "stderr", syscalls: script.writer)
        #expect(output.write("abcdef") == .failed(errno: EPIPE))
        let callsAfterFailure = script.calls
        #expect(output.write("more") == .failedBefore)
        #expect(script.calls == callsAfterFailure)
        #expect(output.failedErrno == EPIPE)
        #expect(output.words(for: EPIPE) == "the reader of stderr has gone (broken pipe)")
    }

    /// A descriptor that was closed when the process started counts as failed (EBADF): nothing
    /// is written into the placeholder that holds its number.
    @Test func descriptorClosedAtStartIsNeverWritten() {
        let script = ScriptedWrite([])
        let output = Output(fileDescriptor: 1, name: "stdout", closedAtStart: true, syscalls: script.writer)
        #expect(output.write("lost") == .failedBefore)
        #expect(script.calls == 0)
        #expect(output.words(for: output.failedErrno ?? 0) == "stdout is closed")
    }
}
