/// The one OTLP `ExportLogsServiceRequest` that each request's records go in, in protobuf's
/// binary encoding (OTLP/HTTP's default, `application/x-protobuf`): one `ResourceLogs` whose
/// resource has ``resourceAttributes``, holding one `ScopeLogs` of scope ``scopeName`` with a
/// `LogRecord` per record (``OTLPExportStage``).
///
/// Field numbers, from opentelemetry-proto v1: `collector/logs/v1/logs_service.proto`
/// (`ExportLogsServiceRequest`: 1 `resource_logs`), `logs/v1/logs.proto` (`ResourceLogs`: 1
/// `resource`, 2 `scope_logs`; `ScopeLogs`: 1 `scope`, 2 `log_records`),
/// `resource/v1/resource.proto` (`Resource`: 1 `attributes`) and `common/v1/common.proto`
/// (`InstrumentationScope`: 1 `name`; `KeyValue`: 1 `key`, 2 `value`; `AnyValue`: 1
/// `string_value`).
///
/// Thread safety: a value type.
package struct OTLPExport: Sendable, Equatable {
    /// The resource's attributes (`host.name`, `service.name`, …), strings, in order.
    package var resourceAttributes: [Attribute]
    /// The instrumentation scope's name.
    package var scopeName: String

    /// One string attribute.
    ///
    /// Thread safety: a value type.
    package struct Attribute: Sendable, Equatable {
        package var key: String
        package var value: String
    }

    package init(resourceAttributes: [(name: String, value: String)], scopeName: String = "streamup") {
        self.resourceAttributes = resourceAttributes.map { Attribute(key: $0.name, value: $0.value) }
        self.scopeName = scopeName
    }

    /// The bytes before the log records of a request whose `LogRecord` fields (each with its
    /// tag and length) take `recordBytes`: the request's `resource_logs` field, its resource,
    /// and the head of its `scope_logs` field with its scope.
    func head(recordBytes: Int) -> [UInt8] {
        var resource = ProtobufWriter()
        for attribute in resourceAttributes {
            resource.message(1) { keyValue in
                keyValue.bytesField(1, Array(attribute.key.utf8))
                keyValue.message(2) { $0.lengthDelimited(1, Array(attribute.value.utf8)) }
            }
        }
        var scope = ProtobufWriter()
        scope.bytesField(1, Array(scopeName.utf8))
        let scopeLogs = ProtobufWriter.lengthDelimitedSize(scope.bytes.count) + recordBytes
        var resourceLogs = ProtobufWriter()
        resourceLogs.lengthDelimited(1, resource.bytes)
        resourceLogs.tag(2, .lengthDelimited)
        resourceLogs.varint(UInt64(scopeLogs))
        resourceLogs.lengthDelimited(1, scope.bytes)
        var request = ProtobufWriter()
        request.tag(1, .lengthDelimited)
        request.varint(UInt64(resourceLogs.bytes.count + recordBytes))
        request.append(resourceLogs.bytes)
        return request.bytes
    }
}
