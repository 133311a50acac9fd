import Foundation
import StreamUp
import StreamUpSystem

/// Where the CLI's diagnostics go: stderr, one line at a time. stdout carries only what a
/// command was asked to print (see ``ResultOutput`` for results, ``log(_:)`` for the sink's
/// request lines).
///
/// Every line goes through ``SecretRedaction/redactingURLs(in:)``: a URL's `user:password@`
/// and credential query parameters never reach the terminal or a log, whichever message
/// carries the URL (the request line of `-v`, a usage error, a redirect's `Location`).
///
/// Nothing here traps or fails a command when its reader has gone: a closed stderr silently
/// drops diagnostics (there is nowhere left to say anything) while the work goes on.
///
/// Thread safety: ``Output`` writes each line whole under its lock; callable from any thread.
enum Terminal {
    /// `streamup: LINE`, or `streamup: PIPELINE: LINE` for a pipeline of `streamup run`.
    static func error(_ line: String, pipeline: String? = nil) {
        let prefix = pipeline.map { "\($0): " } ?? ""
        Output.standardError.write(clearing + "streamup: \(prefix)\(SecretRedaction.redactingURLs(in: line))\n")
    }

    /// A line of `-v` as it is (`PIPELINE: LINE` for a pipeline of `streamup run`).
    static func info(_ line: String, pipeline: String? = nil) {
        let prefix = pipeline.map { "\($0): " } ?? ""
        Output.standardError.write(clearing + "\(prefix)\(SecretRedaction.redactingURLs(in: line))\n")
    }

    /// Whether a progress meter's line is on the terminal (see ``ProgressMeter``).
    private static let meterShown = Mutex(false)

    /// What a line written now starts with: a return and an erase of the meter's line, if one
    /// is shown (the meter draws itself again at its next tick).
    private static var clearing: String {
        meterShown.withLock { $0 } ? "\r\u{1B}[K" : ""
    }

    /// Draws the meter's line in place (a terminal only).
    static func meter(_ line: String) {
        meterShown.withLock { $0 = true }
        Output.standardError.write("\r\u{1B}[K" + line)
    }

    /// Erases the meter's line.
    static func clearMeter() {
        let shown = meterShown.withLock { shown in
            defer { shown = false }
            return shown
        }
        if shown { Output.standardError.write("\r\u{1B}[K") }
    }

    /// A line of a running log on stdout (the sink's request lines). When stdout fails, the
    /// log stops, stderr says so once, and the command goes on: the log was not its point.
    static func log(_ line: String) {
        if case .failed(let errno) = Output.standardOutput.write("\(line)\n") {
            error("\(Output.standardOutput.words(for: errno)): no more lines are printed there; carrying on")
        }
    }
}
