import Foundation

/// Reads an OTLP/HTTP logs answer: a 200 whose `ExportLogsServiceResponse` carries
/// `partial_success` (`ExportLogsPartialSuccess`: `rejected_log_records`, an int64, and
/// `error_message`): https://opentelemetry.io/docs/specs/otlp/#partial-success-1.
///
/// The answer comes in the request's encoding: protobuf (`application/x-protobuf`:
/// `ExportLogsServiceResponse` field 1 `partial_success`, whose field 1 is
/// `rejected_log_records`, field 2 `error_message`, as `collector/logs/v1/logs_service.proto`
/// numbers them) or JSON (`partialSuccess` with `rejectedLogRecords`, a decimal string in proto3
/// JSON, a number from some receivers, and `errorMessage`;
/// https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). Without a content type the
/// body tells: JSON starts with `{`.
///
/// The answer says how many records were refused, not which: the whole request is kept as a
/// dead letter (its other records were stored) and not sent again (the specification: "The
/// client MUST NOT retry the request when it receives a partial success response").
/// `rejected_log_records` 0 with a message is a warning (the spec's words), reported and
/// nothing else.
///
/// Thread safety: stateless.
enum OTLPAnswer {
    /// What the answer's `partial_success` says.
    ///
    /// Thread safety: a value type.
    struct PartialSuccess: Equatable {
        var rejected: Int64 = 0
        var message = ""
    }

    static func read(_ answer: UploadResponse, records: () -> [[UInt8]]) -> PartialFailure? {
        guard answer.isSuccess, let partial = partialSuccess(in: answer) else { return nil }
        guard partial.rejected > 0 else {
            return partial.message.isEmpty ? nil : PartialFailure(summary: "the OTLP receiver warned: \(partial.message)")
        }
        let total = records().count
        let rejected = Int(clamping: partial.rejected)
        return PartialFailure(
            unidentified: rejected,
            summary: "the OTLP receiver rejected \(rejected) of \(total) log records" + (partial.message.isEmpty ? "" : " (\(partial.message))")
                + " without saying which; the whole request is kept, its other records were stored")
    }

    /// The answer's `partial_success`, in either encoding (nil: none).
    static func partialSuccess(in answer: UploadResponse) -> PartialSuccess? {
        let type = (answer.value(forHeader: "Content-Type") ?? "").lowercased()
        let first = answer.body.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        if type.contains("protobuf") || (!type.contains("json") && first != nil && first != UInt8(ascii: "{")) {
            return protobuf([UInt8](answer.body))
        }
        return json(answer.body)
    }

    /// `ExportLogsServiceResponse` in protobuf: field 1 holds `ExportLogsPartialSuccess`.
    static func protobuf(_ body: [UInt8]) -> PartialSuccess? {
        var response = ProtobufReader(body)
        var found: PartialSuccess?
        while let (field, value) = response.next() {
            guard field == 1, case .lengthDelimited(let bytes) = value else { continue }
            var partial = found ?? PartialSuccess()
            var fields = ProtobufReader(bytes)
            while let (inner, value) = fields.next() {
                switch (inner, value) {
                case (1, .varint(let count)): partial.rejected = Int64(bitPattern: count)
                case (2, .lengthDelimited(let text)): partial.message = String(decoding: text, as: UTF8.self)
                default: break
                }
            }
            found = partial
        }
        return found
    }

    /// `ExportLogsServiceResponse` in JSON (the original snake_case names are taken too).
    static func json(_ body: Data) -> PartialSuccess? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let partial = (object["partialSuccess"] ?? object["partial_success"]) as? [String: Any]
        else { return nil }
        return PartialSuccess(
            rejected: count(partial["rejectedLogRecords"] ?? partial["rejected_log_records"]) ?? 0,
            message: (partial["errorMessage"] ?? partial["error_message"]) as? String ?? "")
    }

    private static func count(_ value: Any?) -> Int64? {
        switch value {
        case let number as Int: Int64(number)
        case let text as String: Int64(text)
        default: nil
        }
    }
}
