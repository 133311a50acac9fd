#!/usr/bin/env python3
"""Writes Tests/StreamUpTests/Body/OTLPFixture.swift: OTLP messages encoded by the OpenTelemetry
project's own Python classes (PyPI `opentelemetry-proto`, on Google's `protobuf`), which the
protobuf writer's tests compare streamup's bytes with.

    python3 -m pip install opentelemetry-proto
    python3 Tests/Receivers/otlp_fixture.py > Tests/StreamUpTests/Body/OTLPFixture.swift

The fixture is made once and committed; run this again only when its inputs change.

- `records`: OTLP/JSON LogRecords as streamup's `otlpLogRecord` records carry them, each parsed by
  protobuf's own JSON parser (`json_format.Parse`) into a LogRecord;
- `request`: those records in one ExportLogsServiceRequest with streamup's resource and scope;
- `appRecord`: a LogRecord with every field an app's own OTLP/JSON record may set, built field by
  field (OTLP/JSON writes traceId/spanId as hex, which the proto3 JSON parser does not read);
- `response`: an ExportLogsServiceResponse with a partial success.
"""

import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (ExportLogsPartialSuccess,
                                                                   ExportLogsServiceRequest,
                                                                   ExportLogsServiceResponse)
from opentelemetry.proto.common.v1.common_pb2 import (AnyValue, ArrayValue, InstrumentationScope,
                                                     KeyValue, KeyValueList)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

RECORDS = [
    '{"timeUnixNano":"1763799330123000000","observedTimeUnixNano":"1763799330123000000",'
    '"body":{"stringValue":"plain ASCII line 1"},"attributes":[{"key":"log.file.path","value":'
    '{"stringValue":"/var/log/app.log"}},{"key":"env","value":{"stringValue":"prod"}}]}',
    '{"timeUnixNano":"1763799330123000001","observedTimeUnixNano":"1763799330123000001",'
    '"severityNumber":17,"severityText":"err","body":{"stringValue":"quotes \\"2\\" and '
    '\\\\back\\\\slash\\ttab \\u001b[1m \\u00e9 é 日本語 😀 \\ud83d\\ude00"},"attributes":'
    '[{"key":"empty","value":{"stringValue":""}}]}',
    '{"timeUnixNano":"1763799330123000002","observedTimeUnixNano":"1763799330123000002",'
    '"body":{"stringValue":""}}',
]

APP_RECORD = (
    '{"timeUnixNano":"1","severityNumber":9,"body":{"kvlistValue":{"values":['
    '{"key":"n","value":{"intValue":"-5"}},{"key":"d","value":{"doubleValue":2.5}},'
    '{"key":"b","value":{"boolValue":false}},{"key":"a","value":{"arrayValue":{"values":'
    '[{"stringValue":"x"},{"intValue":7}]}}},{"key":"raw","value":{"bytesValue":"AAEC"}}]}},'
    '"droppedAttributesCount":2,"flags":1,"traceId":"5B8EFFF798038103D269B633813FC60C",'
    '"spanId":"EEE19B7EC3C1B174","eventName":"login","unknownKey":{"x":[1,2]}}')


def string(key, value):
    return KeyValue(key=key, value=AnyValue(string_value=value))


def main():
    records = [json_format.Parse(text, LogRecord()) for text in RECORDS]
    request = ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        resource=Resource(attributes=[string("host.name", "h"), string("service.name", "api")]),
        scope_logs=[ScopeLogs(scope=InstrumentationScope(name="streamup"), log_records=records)])])
    app = LogRecord(
        time_unix_nano=1, severity_number=9,
        body=AnyValue(kvlist_value=KeyValueList(values=[
            KeyValue(key="n", value=AnyValue(int_value=-5)),
            KeyValue(key="d", value=AnyValue(double_value=2.5)),
            KeyValue(key="b", value=AnyValue(bool_value=False)),
            KeyValue(key="a", value=AnyValue(array_value=ArrayValue(values=[
                AnyValue(string_value="x"), AnyValue(int_value=7)]))),
            KeyValue(key="raw", value=AnyValue(bytes_value=b"\x00\x01\x02"))])),
        dropped_attributes_count=2, flags=1,
        trace_id=bytes.fromhex("5B8EFFF798038103D269B633813FC60C"),
        span_id=bytes.fromhex("EEE19B7EC3C1B174"), event_name="login")
    response = ExportLogsServiceResponse(partial_success=ExportLogsPartialSuccess(
        rejected_log_records=3, error_message="3 log records rejected"))

    out = sys.stdout
    out.write("// Made by Tests/Receivers/otlp_fixture.py (opentelemetry-proto's Python classes); do not edit.\n")
    out.write("// python3 Tests/Receivers/otlp_fixture.py > Tests/StreamUpTests/Body/OTLPFixture.swift\n\n")
    out.write("/// OTLP messages as the OpenTelemetry project's Python classes encode them.\n///\n")
    out.write("/// Thread safety: constants.\n")
    out.write("enum OTLPFixture {\n")
    out.write("    /// OTLP/JSON LogRecords as streamup's `otlpLogRecord` records carry them.\n")
    out.write("    static let records: [String] = [\n")
    for text in RECORDS:
        out.write("        #\"" + text + "\"#,\n")
    out.write("    ]\n")
    out.write("    /// Each of `records` as a binary LogRecord, in hex.\n")
    out.write("    static let recordsHex: [String] = [\n")
    for record in records:
        out.write(f'        "{record.SerializeToString().hex()}",\n')
    out.write("    ]\n")
    out.write("    /// `records` in one ExportLogsServiceRequest (resource host.name=h, service.name=api; scope streamup), in hex.\n")
    out.write(f'    static let requestHex = "{request.SerializeToString().hex()}"\n')
    out.write("    /// An app's OTLP/JSON LogRecord with every field set.\n")
    out.write(f'    static let appRecord = #"{APP_RECORD}"#\n')
    out.write("    /// `appRecord` as a binary LogRecord, in hex.\n")
    out.write(f'    static let appRecordHex = "{app.SerializeToString().hex()}"\n')
    out.write("    /// An ExportLogsServiceResponse: partial success, 3 rejected, \"3 log records rejected\", in hex.\n")
    out.write(f'    static let partialSuccessHex = "{response.SerializeToString().hex()}"\n')
    out.write("}\n")


if __name__ == "__main__":
    main()
