import Foundation

/// Reads an OTLP/HTTP logs answer: a 200 whose `ExportLogsServiceResponse` carries
/// `partialSuccess` with `rejectedLogRecords` (an int64, so a decimal string in proto3 JSON;
/// some receivers send a number) and `errorMessage`:
/// https://opentelemetry.io/docs/specs/otlp/#partial-success-1 and the JSON mapping at
/// https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding.
///
/// The answer says how many records were refused, not which: the whole request is kept as a
/// dead letter (its other records were stored) and not sent again. `rejectedLogRecords` 0 with
/// a message is a warning (the spec's words), reported and nothing else.
///
/// Thread safety: stateless.
enum OTLPAnswer {
    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.isSuccess,
            let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let partial = (object["partialSuccess"] ?? object["partial_success"]) as? [String: Any]
        else { return nil }
        let rejected = count(partial["rejectedLogRecords"] ?? partial["rejected_log_records"]) ?? 0
        let message = (partial["errorMessage"] ?? partial["error_message"]) as? String ?? ""
        guard rejected > 0 else {
            return message.isEmpty ? nil : PartialFailure(summary: "the OTLP receiver warned: \(message)")
        }
        let total = records().count
        return PartialFailure(
            unidentified: rejected,
            summary: "the OTLP receiver rejected \(rejected) of \(total) log records" + (message.isEmpty ? "" : " (\(message))")
                + " without saying which; the whole request is kept, its other records were stored")
    }

    private static func count(_ value: Any?) -> Int? {
        switch value {
        case let number as Int: number
        case let text as String: Int(text)
        default: nil
        }
    }
}
