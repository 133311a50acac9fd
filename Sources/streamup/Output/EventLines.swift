import Foundation
import StreamUp
import StreamUpHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The lines an upload's events make on stderr, for every command and pipeline.
///
/// Thread safety: stateless; callable from any thread (each line is written whole).
enum EventLines {
    /// What the library reports, on stderr: failures, recoveries, dead letters and file
    /// notices always (one line each, the first failure of a spell only), the rest with `-v`.
    /// Secret header values are redacted here, URLs' user information in ``Terminal``.
    static func log(_ event: UploadEvent, verbose: Bool, pipeline: String? = nil) {
        func info(_ line: String) { Terminal.info(line, pipeline: pipeline) }
        func error(_ line: String) { Terminal.error(line, pipeline: pipeline) }
        switch event.detail {
        case .requestStarted(let method, let url, let headers):
            guard verbose else { return }
            info("> \(method) \(url.absoluteString)")
            for header in headers { info("> \(header.name): \(SecretRedaction.value(ofField: header.name, header.value))") }
        case .responseReceived(let status, let headers):
            guard verbose else { return }
            let reason = status == 104 ? "Upload Resumption Supported" : HTTPURLResponse.localizedString(forStatusCode: status)
            info("< \(status) \(reason)")
            // The server's words, cleaned as the answer line is: no escape code reaches the terminal.
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                info("< \(BodyText.oneLine(name)): \(BodyText.oneLine(SecretRedaction.value(ofField: name, value)))")
            }
        case .redirectRefused(let status, let location):
            guard verbose else { return }
            info("* not following the \(status) redirect to \(location ?? "?"): a live body cannot be sent twice")
        case .retrying(let reason, let attempt, let delay, let first):
            let wait = UploadRunner.short(delay)
            if verbose {
                info("* \(reason); trying again in \(wait) (failure \(attempt) in a row)")
            } else if first {
                error("delivery is failing: \(reason); retrying from the last acknowledged byte (-v shows each attempt)")
            }
        case .recovered(let failedAttempts, let resentBytes, let after, let duplicatesPossible):
            // A failover or a smaller segment that went through at once took no time to speak of.
            let spell = after < .milliseconds(1) ? "" : " over \(StreamUploader.spoken(after))"
            var line = "delivery recovered after \(failedAttempts) failed attempt\(failedAttempts == 1 ? "" : "s")\(spell)"
            if resentBytes > 0 {
                line += "; \(counted(resentBytes, "byte")) \(resentBytes == 1 ? "was" : "were") sent again"
                if duplicatesPossible { line += " (a receiver that ignores Streamup-Offset may hold some of them twice)" }
            }
            error(line)
        case .deadLettered(let bytes, let file, let reason):
            error("\(reason): kept the segment (\(counted(bytes, "byte"))) in \(file) and went on")
        case .recordsRejected(_, let reason, let file):
            error(reason + (file.map { "; kept in \($0)" } ?? "; not kept (--dead-letter DIR keeps refused records)"))
        case .notice(let text), .gaveUp(let text):
            error(text)
        case .source(let event):
            guard verbose || event.isNotice else { return }
            error(event.description)
        }
    }
}
