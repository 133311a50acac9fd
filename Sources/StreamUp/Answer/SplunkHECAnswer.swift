import Foundation

/// Reads a Splunk HTTP Event Collector answer. HEC handles a batch event by event: an invalid
/// event N ends it with 400 and `{"text":…,"code":6,"invalid-event-number":N}` (or code 12, 13,
/// 15 for a missing, blank or badly indexed event); the events before N were indexed, N was
/// not, and none after it were looked at:
/// https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/TroubleshootHTTPEventCollector
/// (status codes) and https://docs.splunk.com/Documentation/Splunk/9.1.1/Data/FormateventsforHTTPEventCollector
/// (batches of concatenated events).
///
/// So event N is rejected and the events after it are sent again at once (N is 0-based, as
/// the docs' examples count).
///
/// Thread safety: stateless.
enum SplunkHECAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard (400..<500).contains(answer.statusCode),
            let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let number = eventNumber(object["invalid-event-number"])
        else { return nil }
        let count = records().count
        let code = object["code"].map { "code \($0)" } ?? "status \(answer.statusCode)"
        let text = object["text"] as? String ?? "invalid event"
        guard number >= 0, number < count else {
            return PartialFailure(
                unidentified: 1,
                summary: "Splunk HEC refused event \(number) of a request of \(count) (\(code): \(text)), which it did not carry; the whole request is kept")
        }
        let rest = number + 1 < count ? number + 1 : nil
        return PartialFailure(
            rejected: [PartialFailure.Rejection(index: number, reason: "\(code): \(text)")], unprocessedFrom: rest,
            summary: "Splunk HEC refused event \(number + 1) of \(count) (\(code): \(text)); the \(number) before it were indexed"
                + (rest == nil ? "" : ", the \(count - number - 1) after it are sent again"))
    }

    /// The number, sent as a JSON number or a string of digits.
    private static func eventNumber(_ value: Any?) -> Int? {
        switch value {
        case let number as Int: number
        case let text as String: Int(text)
        default: nil
        }
    }
}
