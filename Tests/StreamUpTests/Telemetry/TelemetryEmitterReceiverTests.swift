import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

extension InProcessUploads {
    /// An emitter that speaks a receiver's API: OTLP in protobuf, read back with the
    /// OpenTelemetry project's own Python classes.
    @Suite(.timeLimit(.minutes(2))) struct TelemetryEmitterReceiverTests {
        /// Each emitted value is one OTLP log record whose string body is its JSON, with the time
        /// it was emitted, under the resource of the host and the labels; a heartbeat's beat is
        /// one too. Every request is an `ExportLogsServiceRequest` in protobuf.
        @Test(.enabled(if: OptionalTool.opentelemetryProto.isAvailable, Comment(rawValue: OptionalTool.opentelemetryProto.skipReason)))
        func anOTLPEmitterSendsProtobufLogRecords() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                // (Records are timed to the millisecond.)
                let before = UInt64(Date().timeIntervalSince1970 * 1000) * 1_000_000
                let emitter = try TelemetryEmitter(receiver: .otlp, url: sink.url, labels: [("service.name", "billing")])
                emitter.startHeartbeat(every: .seconds(60), fields: [("job", "nightly")])
                for index in 0..<3 {
                    try await emitter.emit(Reading(task: 1, index: index, note: "é \"q\""))
                }
                // The first beat is written by its own task: it is delivered before the end.
                let beatName = Array("nightly".utf8)
                #expect(await eventually { sink.requests.contains { ($0.body ?? []).contains(beatName) } }, "the first beat never arrived")
                let response = try await emitter.finish(within: .seconds(20))
                #expect(response?.isSuccess == true)
                let requests = sink.requests.sorted { $0.sequence < $1.sequence }
                #expect(!requests.isEmpty && requests.allSatisfy { $0.headers.first(named: "Content-Type") == "application/x-protobuf" })
                #expect(requests.allSatisfy { $0.path == "/v1/logs" }, "\(requests.map(\.path))")
                let decoded = try ExternalTool.python(
                    #"""
                    import json, sys
                    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
                    out = []
                    for hexed in sys.stdin.read().split():
                        request = ExportLogsServiceRequest.FromString(bytes.fromhex(hexed))
                        for rl in request.resource_logs:
                            resource = {kv.key: kv.value.string_value for kv in rl.resource.attributes}
                            for sl in rl.scope_logs:
                                for lr in sl.log_records:
                                    out.append({"body": lr.body.string_value, "time": lr.time_unix_nano,
                                                "resource": resource, "scope": sl.scope.name})
                    json.dump(out, sys.stdout)
                    """#, input: Array(requests.map { ($0.body ?? []).map { String(format: "%02x", $0) }.joined() }.joined(separator: "\n").utf8))
                #expect(decoded.status == 0, "\(decoded.errorText)")
                let records = try #require(try JSONSerialization.jsonObject(with: Data(decoded.output)) as? [[String: Any]])
                let bodies = records.compactMap { $0["body"] as? String }
                let readings = bodies.compactMap { try? JSONDecoder().decode(Reading.self, from: Data($0.utf8)) }
                #expect(readings == (0..<3).map { Reading(task: 1, index: $0, note: "é \"q\"") }, "\(bodies)")
                #expect(bodies.contains { $0.contains(#""seq":1"#) && $0.contains(#""job":"nightly""#) }, "no beat: \(bodies)")
                for record in records {
                    #expect(((record["time"] as? NSNumber)?.uint64Value ?? 0) >= before, "\(record)")
                    #expect((record["resource"] as? [String: String])?["service.name"] == "billing" && record["scope"] as? String == "streamup")
                }
            }
        }
    }
}
