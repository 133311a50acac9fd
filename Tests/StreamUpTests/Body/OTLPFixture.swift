// Made by Tests/Receivers/otlp_fixture.py (opentelemetry-proto's Python classes); do not edit.
// python3 Tests/Receivers/otlp_fixture.py > Tests/StreamUpTests/Body/OTLPFixture.swift

/// OTLP messages as the OpenTelemetry project's Python classes encode them.
///
/// Thread safety: constants.
enum OTLPFixture {
    /// OTLP/JSON LogRecords as streamup's `otlpLogRecord` records carry them.
    static let records: [String] = [
        #"{"timeUnixNano":"1763799330123000000","observedTimeUnixNano":"1763799330123000000","body":{"stringValue":"plain ASCII line 1"},"attributes":[{"key":"log.file.path","value":{"stringValue":"/var/log/app.log"}},{"key":"env","value":{"stringValue":"prod"}}]}"#,
        #"{"timeUnixNano":"1763799330123000001","observedTimeUnixNano":"1763799330123000001","severityNumber":17,"severityText":"err","body":{"stringValue":"quotes \"2\" and \\back\\slash\ttab \u001b[1m \u00e9 é 日本語 😀 \ud83d\ude00"},"attributes":[{"key":"empty","value":{"stringValue":""}}]}"#,
        #"{"timeUnixNano":"1763799330123000002","observedTimeUnixNano":"1763799330123000002","body":{"stringValue":""}}"#,
    ]
    /// Each of `records` as a binary LogRecord, in hex.
    static let recordsHex: [String] = [
        "09c0a80d4f25467a182a140a12706c61696e204153434949206c696e65203132230a0d6c6f672e66696c652e7061746812120a102f7661722f6c6f672f6170702e6c6f67320d0a03656e7612060a0470726f6459c0a80d4f25467a18",
        "09c1a80d4f25467a1810111a036572722a3f0a3d71756f7465732022322220616e64205c6261636b5c736c61736809746162201b5b316d20c3a920c3a920e697a5e69cace8aa9e20f09f988020f09f9880320b0a05656d70747912020a0059c1a80d4f25467a18",
        "09c2a80d4f25467a182a020a0059c2a80d4f25467a18",
    ]
    /// `records` in one ExportLogsServiceRequest (resource host.name=h, service.name=api; scope streamup), in hex.
    static let requestHex =
        "0a99020a290a100a09686f73742e6e616d6512030a01680a150a0c736572766963652e6e616d6512050a0361706912eb010a0a0a0873747265616d7570125c09c0a80d4f25467a182a140a12706c61696e204153434949206c696e65203132230a0d6c6f672e66696c652e7061746812120a102f7661722f6c6f672f6170702e6c6f67320d0a03656e7612060a0470726f6459c0a80d4f25467a18126709c1a80d4f25467a1810111a036572722a3f0a3d71756f7465732022322220616e64205c6261636b5c736c61736809746162201b5b316d20c3a920c3a920e697a5e69cace8aa9e20f09f988020f09f9880320b0a05656d70747912020a0059c1a80d4f25467a18121609c2a80d4f25467a182a020a0059c2a80d4f25467a18"
    /// An app's OTLP/JSON LogRecord with every field set.
    static let appRecord =
        #"{"timeUnixNano":"1","severityNumber":9,"body":{"kvlistValue":{"values":[{"key":"n","value":{"intValue":"-5"}},{"key":"d","value":{"doubleValue":2.5}},{"key":"b","value":{"boolValue":false}},{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":7}]}}},{"key":"raw","value":{"bytesValue":"AAEC"}}]}},"droppedAttributesCount":2,"flags":1,"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","eventName":"login","unknownKey":{"x":[1,2]}}"#
    /// `appRecord` as a binary LogRecord, in hex.
    static let appRecordHex =
        "09010000000000000010092a4d324b0a100a016e120b18fbffffffffffffffff010a0e0a016412092100000000000004400a070a0162120210000a100a0161120b2a090a030a01780a0218070a0c0a0372617712053a03000102380245010000004a105b8efff798038103d269b633813fc60c5208eee19b7ec3c1b17462056c6f67696e"
    /// An ExportLogsServiceResponse: partial success, 3 rejected, "3 log records rejected", in hex.
    static let partialSuccessHex = "0a1a0803121633206c6f67207265636f7264732072656a6563746564"
}
