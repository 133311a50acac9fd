import Foundation
import StreamUp
import StreamUpHTTP

/// The two ways the CLI uploads: one request, or acknowledged segments with retries.
///
/// Thread safety: both uploaders are callable from any thread.
protocol Upload: UploadRunning {
    /// Progress in words, for `-v`.
    var progressLine: String { get }
    /// Progress in numbers, for the meter.
    var meterCounts: ProgressMeter.Counts { get }
    /// What became of bytes the server did not acknowledge, when the upload failed (nil: nothing to say).
    var unacknowledgedLine: String? { get }
    /// What an abort now (a second signal, a timeout) loses or where it is kept.
    var abortLine: String { get }
    /// What the server refused and where it was kept, when it refused anything (dead letters).
    var refusedLine: String? { get }
    /// The uploader's own counts for `--metrics`.
    var metricGauges: Metrics.Gauges { get }
}

extension StreamUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        return "read \(counted(progress.bytesProduced, "byte")), sent \(progress.bytesSent), buffered \(progress.bytesBuffered)"
    }

    var unacknowledgedLine: String? { nil }
    var refusedLine: String? { nil }

    var abortLine: String {
        let progress = self.progress
        let unsent =
            progress.bytesBuffered > 0
            ? "; \(counted(progress.bytesBuffered, "byte")) read \(progress.bytesBuffered == 1 ? "was" : "were") not sent and \(progress.bytesBuffered == 1 ? "is" : "are") lost"
            : ""
        return "the request ended without an answer: the server may hold none, some or all of the \(counted(progress.bytesSent, "byte")) sent\(unsent)"
    }

    var meterCounts: ProgressMeter.Counts {
        let progress = self.progress
        return ProgressMeter.Counts(read: progress.bytesProduced, delivered: progress.bytesSent, waiting: progress.bytesBuffered, retries: 0)
    }

    /// One request: bytes handed to the connection count as delivered; no lines are counted.
    var metricGauges: Metrics.Gauges {
        let progress = self.progress
        return Metrics.Gauges(
            bytesRead: progress.bytesProduced, bytesDelivered: progress.bytesSent, heldBytes: progress.bytesBuffered,
            capacityBytes: configuration.bufferSize)
    }
}

extension ReliableUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        let recovered = recoveredBytes > 0 ? ", \(recoveredBytes) from the spool" : ""
        let paused = progress.pauses > 0 ? ", paused \(counted(progress.pauses, "time"))" + String(format: " (%.1f s)", progress.pausedTime.seconds) : ""
        var refused =
            progress.deadLetters > 0 ? ", \(counted(progress.deadLetters, "segment")) (\(counted(progress.deadLetterBytes, "byte"))) kept as dead letters" : ""
        if progress.rejectedRecords > 0 { refused += ", \(counted(progress.rejectedRecords, "record")) refused" }
        return
            "read \(counted(progress.produced, "byte"))\(recovered), acknowledged \(progress.acknowledged), held \(progress.held), resent \(progress.resent), retries \(progress.retries)\(paused)\(refused)"
    }

    var meterCounts: ProgressMeter.Counts {
        let progress = self.progress
        return ProgressMeter.Counts(
            read: progress.produced, delivered: bytesDelivered, waiting: progress.held, retries: progress.retries)
    }

    var metricGauges: Metrics.Gauges {
        let progress = self.progress
        return Metrics.Gauges(
            linesRead: linesProduced, bytesRead: progress.produced, bytesDelivered: bytesDelivered, bytesResent: progress.resent,
            retries: progress.retries, deadLetters: progress.deadLetters, deadLetterBytes: progress.deadLetterBytes,
            recordsRefused: progress.rejectedRecords, heldBytes: progress.held, capacityBytes: storageCapacity,
            storage: options.spoolDirectory == nil ? "memory" : "spool", oldestUnacknowledged: oldestUnacknowledgedAge)
    }

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

    var unacknowledgedLine: String? {
        let held = progress.held
        guard held > 0 else { return nil }
        if let spool = options.spoolDirectory {
            return
                "\(counted(held, "byte")) the server did not acknowledge \(held == 1 ? "is" : "are") kept in \(spool); the next start with --spool \(spool) sends them first"
        }
        return
            "\(counted(held, "byte")) read \(held == 1 ? "was" : "were") not delivered and \(held == 1 ? "is" : "are") lost (--spool DIR keeps them for the next start)"
    }

    var abortLine: String {
        unacknowledgedLine ?? "nothing is lost: every byte read was acknowledged"
    }
}
