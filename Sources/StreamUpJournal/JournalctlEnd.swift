import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a journalctl that ended by itself (not stopped by streamup) means, in one line: what
/// happened, what is lost, what to do.
///
/// Thread safety: stateless.
package enum JournalctlEnd {
    /// The line for a journalctl whose process ended with `status`, by a signal when `signaled`.
    package static func line(status: Int32, signaled: Bool) -> String {
        let what: String
        if signaled {
            let name = strsignal(status).map { String(cString: $0) } ?? "signal \(status)"
            what = "journalctl was killed by signal \(status) (\(name))"
        } else if status == 127 {
            what = "journalctl could not be run (exit status 127: is systemd's journalctl installed and on PATH?)"
        } else if status == 0 {
            what = "journalctl stopped following by itself (exit status 0; its reason, if it gave one, is the line above)"
        } else {
            what = "journalctl ended with exit status \(status) (its reason is the line it wrote above)"
        }
        return what
            + ": no more journal entries are read; start streamup again (with --state it goes on after the last entry the receiver acknowledged)"
    }

    /// The line for a journalctl that could not be started at all.
    package static func cannotStart(_ error: any Error) -> String {
        let error = error as NSError
        let reason = error.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32(error.code))) : "the system refused a new process"
        return "cannot start journalctl (\(reason)): no journal entry is read"
    }
}
