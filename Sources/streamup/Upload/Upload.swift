import Foundation
import StreamUp
import StreamUpHTTP

/// What the CLI says about an upload (acknowledged segments, or one live request), for `-v`,
/// the progress meter, `--metrics` and the lines at the end.
///
/// Thread safety: the uploader is callable from any thread.
extension StreamUploader {
    /// Progress in words, for `-v`.
    var progressLine: String {
        let progress = self.progress
        if isSingleRequest {
            return "read \(counted(progress.produced, "byte")), sent \(bytesDelivered), buffered \(progress.held)"
        }
        let recovered = recoveredBytes > 0 ? ", \(recoveredBytes) from the spool" : ""
        let paused = progress.pauses > 0 ? ", paused \(counted(progress.pauses, "time"))" + String(format: " (%.1f s)", progress.pausedTime.seconds) : ""
        var refused =
            progress.deadLetters > 0 ? ", \(counted(progress.deadLetters, "segment")) (\(counted(progress.deadLetterBytes, "byte"))) kept as dead letters" : ""
        if progress.rejectedRecords > 0 { refused += ", \(counted(progress.rejectedRecords, "record")) refused" }
        return
            "read \(counted(progress.produced, "byte"))\(recovered), acknowledged \(progress.acknowledged), held \(progress.held), resent \(progress.resent), retries \(progress.retries)\(paused)\(refused)"
    }

    /// Progress in numbers, for the meter.
    var meterCounts: ProgressMeter.Counts {
        let progress = self.progress
        return ProgressMeter.Counts(
            read: progress.produced, sent: isSingleRequest ? bytesDelivered : bytesSent, acknowledged: bytesDelivered, waiting: progress.held,
            retries: progress.retries)
    }

    /// The uploader's own counts for `--metrics`; one request: bytes handed to the connection
    /// count as delivered, and no lines are counted.
    var metricGauges: Metrics.Gauges {
        let progress = self.progress
        if isSingleRequest {
            return Metrics.Gauges(bytesRead: progress.produced, bytesDelivered: bytesDelivered, heldBytes: progress.held, capacityBytes: storageCapacity)
        }
        return Metrics.Gauges(
            linesRead: linesProduced, bytesRead: progress.produced, bytesDelivered: bytesDelivered, bytesResent: progress.resent,
            retries: progress.retries, deadLetters: progress.deadLetters, deadLetterBytes: progress.deadLetterBytes,
            recordsRefused: progress.rejectedRecords, heldBytes: progress.held, capacityBytes: storageCapacity,
            storage: options.spoolDirectory == nil ? "memory" : "spool", oldestUnacknowledged: oldestUnacknowledgedAge,
            requestsInFlight: requestWindow.inFlight, requestWindow: requestWindow.limit)
    }

    /// What the server refused and where it was kept, when it refused anything (dead letters).
    var refusedLine: String? {
        let progress = self.progress
        var lines: [String] = []
        if progress.deadLetters > 0, let directory = options.deadLetterDirectory?.path {
            let segments = counted(progress.deadLetters, "segment") + (progress.deadLetters == 1 ? " was" : " were")
            lines.append("\(segments) not delivered (\(counted(progress.deadLetterBytes, "byte"))) and kept in \(directory) (--dead-letter)")
        }
        if progress.rejectedRecords > 0 {
            let records = counted(progress.rejectedRecords, "record")
            let kept = options.deadLetterDirectory.map { "kept in \($0.path)" } ?? "not kept (--dead-letter DIR keeps them)"
            lines.append("the server refused \(records), \(kept)")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }

    /// What became of bytes the server did not acknowledge, when the upload failed (nil: nothing
    /// to say; one request: nothing is acknowledged before the answer).
    var unacknowledgedLine: String? {
        guard !isSingleRequest else { return nil }
        let held = progress.held
        guard held > 0 else { return nil }
        if let spool = options.spoolDirectory, isSpoolGone {
            return "\(counted(held, "byte")) the server did not acknowledge \(held == 1 ? "is" : "are") lost: the spool \(spool) was deleted while running"
        }
        if let spool = options.spoolDirectory {
            let unfinished = unfinishedSpoolBytes
            let kept = held - unfinished
            let dropped =
                unfinished == 0
                ? "" : "; the last \(counted(unfinished, "byte")) (a record the input did not finish) \(unfinished == 1 ? "is" : "are") dropped then"
            guard kept > 0 else {
                return "\(counted(unfinished, "byte")) of a record the input did not finish \(unfinished == 1 ? "is" : "are") lost"
            }
            return
                "\(counted(kept, "byte")) the server did not acknowledge \(kept == 1 ? "is" : "are") kept in \(spool); the next start with --spool \(spool) sends them first\(dropped)"
        }
        if let state = options.stateFile?.path {
            // The state file keeps the position of the last acknowledged byte: the next start
            // reads the rest again from its source.
            return
                "\(counted(held, "byte")) read \(held == 1 ? "was" : "were") not acknowledged; the next start with --state \(state) reads \(held == 1 ? "it" : "them") again from \(held == 1 ? "its" : "their") source"
        }
        return
            "\(counted(held, "byte")) read \(held == 1 ? "was" : "were") not delivered and \(held == 1 ? "is" : "are") lost (--spool DIR keeps them for the next start)"
    }

    /// What an abort now (a second signal, a timeout) loses or where it is kept.
    var abortLine: String {
        if isSingleRequest {
            let (sent, held) = (bytesDelivered, progress.held)
            let unsent = held > 0 ? "; \(counted(held, "byte")) read \(held == 1 ? "was" : "were") not sent and \(held == 1 ? "is" : "are") lost" : ""
            return "the request ended without an answer: the server may hold none, some or all of the \(counted(sent, "byte")) sent\(unsent)"
        }
        return unacknowledgedLine ?? "nothing is lost: every byte read was acknowledged"
    }
}
