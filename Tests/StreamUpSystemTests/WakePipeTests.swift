import Foundation
import StreamUpSystem
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The wake pipe: a thread blocked in `poll(2)` wakes when another thread signals.
struct WakePipeTests {
    /// A thread waiting in poll(2) with no timeout returns when the pipe is signalled.
    @Test func signalWakesAThreadBlockedInPoll() throws {
        let wake = try WakePipe(throwing: SystemCallError.self)
        defer { wake.close() }
        let poller = Poller()
        let thread = Thread { poller.run(wake.readEnd) }
        thread.start()
        #expect(poller.woke == false)

        wake.signal()
        let deadline = ContinuousClock.now + .seconds(10)
        while !poller.woke, ContinuousClock.now < deadline { _ = poll(nil, 0, 10) }
        #expect(poller.woke)
        #expect(wake.isSignalled)
        #expect(throws: CancellationError.self) { try wake.checkCancelled() }
    }

    /// Before a signal the read end is not readable; after one it stays readable for every
    /// later poll, however often it is signalled.
    @Test func signalKeepsTheReadEndReadable() throws {
        let wake = try WakePipe(throwing: SystemCallError.self)
        defer { wake.close() }
        #expect(Self.isReadable(wake.readEnd) == false)
        #expect(wake.isSignalled == false)
        wake.signal()
        wake.signal()
        #expect(Self.isReadable(wake.readEnd))
        #expect(Self.isReadable(wake.readEnd))
    }

    /// Signalling after close does nothing (no write to a closed descriptor), and close twice
    /// is fine.
    @Test func signalAfterCloseIsHarmless() throws {
        let wake = try WakePipe(throwing: SystemCallError.self)
        wake.close()
        wake.signal()
        wake.close()
        #expect(wake.isSignalled)
    }

    private static func isReadable(_ fd: CInt) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }
}

/// A thread blocked in `poll(2)` on one descriptor with no timeout.
///
/// Thread safety: guarded by the `state` mutex; callable from any thread.
private final class Poller: Sendable {
    private let state = Mutex(false)

    var woke: Bool { state.withLock { $0 } }

    func run(_ fd: CInt) {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&entry, 1, -1) < 0 && errno == EINTR {}
        state.withLock { $0 = true }
    }
}
