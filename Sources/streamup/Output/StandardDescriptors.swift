#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Descriptors 0, 1 and 2 as the process found them. A closed one (`<&-`, `>&-`, `2>&-`) is
/// filled with `/dev/null` before anything else opens a file: otherwise the next descriptor
/// the process opens (a socket, libdispatch's eventfd) takes its number, and stdin would read
/// from it (seen: `Invalid argument (errno 22)` for `streamup URL <&-`) or a diagnostic would be
/// written into a socket. The numbers that were closed are remembered, so stdout and stderr
/// count as closed (``Output``) and an upload from a closed stdin is refused.
///
/// Thread safety: `closedAtStart` is computed once, on first use, which `main` makes the
/// first thing the process does.
enum StandardDescriptors {
    static let closedAtStart: Set<Int32> = {
        var closed: Set<Int32> = []
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            closed.insert(fd)
            // The lowest free number is `fd` itself, since the ones below it are open by now.
            let placeholder = open("/dev/null", O_RDWR)
            if placeholder >= 0 && placeholder != fd {
                _ = dup2(placeholder, fd)
                _ = close(placeholder)
            }
        }
        return closed
    }()

    /// Why an upload of stdin cannot start, when stdin was closed (`<&-`); nil otherwise.
    static var closedStdinProblem: String? {
        guard closedAtStart.contains(0) else { return nil }
        return
            "stdin is closed (<&-), so there is nothing to stream: pipe something in (tail -F app.log | streamup URL) or follow a file (streamup tail FILE URL)"
    }

    /// Fills closed standard descriptors now (see the type's doc). Call first thing in `main`.
    static func reserve() {
        _ = closedAtStart
    }
}
