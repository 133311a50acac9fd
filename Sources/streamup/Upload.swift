import Foundation
import StreamUp

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
    /// What the server refused and where it was kept, when it refused anything (dead letters).
    var refusedLine: String? { get }
}

extension StreamUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        return "read \(progress.bytesProduced) bytes, sent \(progress.bytesSent), buffered \(progress.bytesBuffered)"
    }

    var unacknowledgedLine: String? { nil }
    var refusedLine: String? { nil }

    var meterCounts: ProgressMeter.Counts {
        let progress = self.progress
        return ProgressMeter.Counts(read: progress.bytesProduced, delivered: progress.bytesSent, waiting: progress.bytesBuffered, retries: 0)
    }
}

extension ReliableUploader: Upload {
    var progressLine: String {
        let progress = self.progress
        let recovered = recoveredBytes > 0 ? ", \(recoveredBytes) from the spool" : ""
        let paused = progress.pauses > 0 ? String(format: ", paused %d times (%.1f s)", progress.pauses, progress.pausedTime.seconds) : ""
        var refused = progress.deadLetters > 0 ? ", \(progress.deadLetters) segments (\(progress.deadLetterBytes) bytes) kept as dead letters" : ""
        if progress.rejectedRecords > 0 { refused += ", \(progress.rejectedRecords) records refused" }
        return "read \(progress.produced) bytes\(recovered), acknowledged \(progress.acknowledged), held \(progress.held), resent \(progress.resent), retries \(progress.retries)\(paused)\(refused)"
    }

    var meterCounts: ProgressMeter.Counts {
        let progress = self.progress
        return ProgressMeter.Counts(
            read: progress.produced, delivered: bytesDelivered, waiting: progress.held, retries: progress.retries)
    }

    var refusedLine: String? {
        let progress = self.progress
        var lines: [String] = []
        if progress.deadLetters > 0, let directory = options.deadLetterDirectory?.path {
            let segments = progress.deadLetters == 1 ? "1 segment was" : "\(progress.deadLetters) segments were"
            lines.append("\(segments) not delivered (\(progress.deadLetterBytes) bytes) and kept in \(directory) (--dead-letter)")
        }
        if progress.rejectedRecords > 0 {
            let records = progress.rejectedRecords == 1 ? "1 record" : "\(progress.rejectedRecords) records"
            let kept = options.deadLetterDirectory.map { "kept in \($0.path)" } ?? "not kept (--dead-letter DIR keeps them)"
            lines.append("the server refused \(records), \(kept)")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }

    var unacknowledgedLine: String? {
        let held = progress.held
        guard held > 0 else { return nil }
        if let spool = options.spoolDirectory {
            return "\(held) bytes the server did not acknowledge are kept in \(spool); the next start with --spool \(spool) sends them first"
        }
        return "\(held) bytes read were not delivered and are lost (--spool DIR keeps them for the next start)"
    }
}

