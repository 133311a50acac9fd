import Foundation
import StreamUp

/// Exit statuses, as `--help` lists them.
///
/// Thread safety: constants.
enum ExitStatus {
    static let success: Int32 = 0
    static let httpFailure: Int32 = 1
    static let noAnswer: Int32 = 2
    static let usage: Int32 = 64
    /// A file, directory, socket or output streamup needs could not be used: stdout closed or
    /// its reader gone, `-o FILE`, the spool, the state file, the sink's port or directory
    /// (EX_IOERR in sysexits.h).
    static let ioFailure: Int32 = 74
    static let interrupted: Int32 = 130
}
