#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owns one socket file descriptor and closes it exactly once.
///
/// `init(owning:)` moves ownership of the descriptor into the value; ``close()`` consumes the
/// value, so the compiler rules out a second close or any use after it. Dropping a socket without
/// closing it is a bug: `deinit` asserts, and closes the descriptor anyway in release builds.
///
/// SIGPIPE: on Linux every send passes `MSG_NOSIGNAL` (in ``send(_:flags:)``); on Darwin
/// `SO_NOSIGPIPE` is set in `init(owning:)`. The sink never changes the process's signal
/// dispositions.
///
/// Thread safety: not Sendable; used by the one thread that owns it. (Other threads only ever
/// see the raw number, through ``ConnectionRegistry``, which calls `shutdown(2)` and never `close`.)
struct Socket: ~Copyable {
    /// How a `recv` ended.
    enum ReceiveResult: Equatable {
        case bytes(Int)
        case endOfFile
        /// `SO_RCVTIMEO` expired (or the socket is non-blocking and empty).
        case timedOut
    }

    /// The raw descriptor, valid until ``close()``.
    let descriptor: CInt

    /// Takes ownership of `descriptor`; from now on only this value may close it. Marks it
    /// close-on-exec, so child processes never inherit a connection.
    init(owning descriptor: CInt) {
        precondition(descriptor >= 0, "invalid descriptor \(descriptor)")
        self.descriptor = descriptor
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        #if canImport(Darwin)
        try? setOption(SOL_SOCKET, SO_NOSIGPIPE, 1 as CInt, name: "setsockopt(SO_NOSIGPIPE)")
        #endif
    }

    deinit {
        assertionFailure("Socket \(descriptor) was dropped without close()")
        _ = systemClose(descriptor)
    }

    /// Closes the descriptor (`close(2)`). A failure other than `EINTR` is ignored: the
    /// descriptor is gone either way on Linux and Darwin.
    consuming func close() {
        let descriptor = self.descriptor
        discard self
        _ = systemClose(descriptor)
    }

    /// Gives up ownership without closing and returns the raw descriptor, for handing it to
    /// another thread that wraps it again with `init(owning:)`.
    consuming func release() -> CInt {
        let descriptor = self.descriptor
        discard self
        return descriptor
    }

    /// Reads into `buffer` with `recv(2)`.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SinkError) -> ReceiveResult {
        let outcome = try SystemCall.run("recv") {
            systemReceive(descriptor, buffer.baseAddress, buffer.count, 0)
        }
        switch outcome {
        case .done(0): return .endOfFile
        case .done(let count): return .bytes(count)
        case .wouldBlock: return .timedOut
        }
    }

    /// Writes all of `bytes` with `send(2)`, looping over partial sends. Throws on a timeout
    /// (`SO_SNDTIMEO`) with errno `EAGAIN`, and on a peer that went away (`EPIPE`, `ECONNRESET`).
    func send(_ bytes: UnsafeRawBufferPointer, flags: CInt = 0) throws(SinkError) {
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            let base = bytes.baseAddress! + offset
            let sent = try SystemCall.runBlocking("send") {
                systemSend(descriptor, base, remaining, flags | Socket.noSignalFlag)
            }
            offset += sent
        }
    }

    /// Writes all of `bytes`; convenience for small responses.
    func send(_ bytes: [UInt8], flags: CInt = 0) throws(SinkError) {
        var failure: SinkError?
        bytes.withUnsafeBytes { raw in
            do throws(SinkError) { try send(raw, flags: flags) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// `shutdown(2)` with `how` (`SHUT_RD`, `SHUT_WR`, `SHUT_RDWR`). `ENOTCONN` is ignored:
    /// the peer may already be gone.
    func shutdown(_ how: CInt) {
        Socket.shutdown(descriptor: descriptor, how)
    }

    /// `shutdown(2)` on a descriptor owned by someone else; see ``ConnectionRegistry``.
    static func shutdown(descriptor: CInt, _ how: CInt) {
        do {
            _ = try SystemCall.run("shutdown") { systemShutdown(descriptor, how) }
        } catch {
            // ENOTCONN and friends: the connection is already gone, which is what we wanted.
        }
    }

    /// Sets `SO_RCVTIMEO` and `SO_SNDTIMEO` (`setsockopt(2)`); a zero duration means "never".
    func setTimeouts(_ timeout: Duration) throws(SinkError) {
        let value = Socket.timeValue(timeout)
        try setOption(SOL_SOCKET, SO_RCVTIMEO, value, name: "setsockopt(SO_RCVTIMEO)")
        try setOption(SOL_SOCKET, SO_SNDTIMEO, value, name: "setsockopt(SO_SNDTIMEO)")
    }

    /// Sets `SO_RCVTIMEO` alone (`setsockopt(2)`): how long one ``receive(into:)`` may block.
    /// A duration under a microsecond is rounded up to one (zero would mean "never").
    func setReceiveTimeout(_ timeout: Duration) throws(SinkError) {
        try setOption(SOL_SOCKET, SO_RCVTIMEO, Socket.timeValue(timeout), name: "setsockopt(SO_RCVTIMEO)")
    }

    /// `timeout` as a `timeval`, at least one microsecond when positive.
    private static func timeValue(_ timeout: Duration) -> timeval {
        let (seconds, attoseconds) = timeout.components
        var value = timeval()
        value.tv_sec = .init(max(0, seconds))
        value.tv_usec = .init(max(0, attoseconds / 1_000_000_000_000))
        if seconds == 0 && value.tv_usec == 0 && attoseconds > 0 {
            value.tv_usec = 1
        }
        return value
    }

    /// Turns `O_NONBLOCK` on or off (`fcntl(2)`). The listener is non-blocking; connections
    /// are blocking (set explicitly, because on Darwin they inherit the listener's flag).
    func setNonBlocking(_ enabled: Bool) throws(SinkError) {
        let fd = descriptor
        let flags = try SystemCall.runBlocking("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        let wanted = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        guard wanted != flags else { return }
        _ = try SystemCall.runBlocking("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, wanted) }
    }

    /// `setsockopt(2)` with a fixed-size value.
    func setOption<Value: BitwiseCopyable>(
        _ level: CInt, _ option: CInt, _ value: Value, name: StaticString
    ) throws(SinkError) {
        _ = try SystemCall.runBlocking("\(name)") {
            withUnsafeBytes(of: value) { raw in
                systemSetOption(descriptor, level, option, raw.baseAddress, socklen_t(raw.count))
            }
        }
    }

    #if canImport(Glibc)
    static let noSignalFlag = CInt(MSG_NOSIGNAL)
    #else
    static let noSignalFlag: CInt = 0
    #endif
}

// The C functions under names that don't clash with the methods above.
@inline(__always) private func systemClose(_ fd: CInt) -> CInt {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}

@inline(__always) private func systemReceive(
    _ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: CInt
) -> Int {
    recv(fd, buffer, count, flags)
}

@inline(__always) private func systemSend(
    _ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: CInt
) -> Int {
    send(fd, buffer, count, flags)
}

@inline(__always) private func systemShutdown(_ fd: CInt, _ how: CInt) -> CInt { shutdown(fd, how) }

@inline(__always) private func systemSetOption(
    _ fd: CInt, _ level: CInt, _ option: CInt, _ value: UnsafeRawPointer?, _ length: socklen_t
) -> CInt {
    setsockopt(fd, level, option, value, length)
}
