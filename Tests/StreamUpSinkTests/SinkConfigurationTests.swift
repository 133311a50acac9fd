import Testing

@testable import StreamUpSink

/// Configuration defaults and validation.
struct SinkConfigurationTests {
    /// The defaults are the documented ones and pass validation.
    @Test func defaultsAreTheDocumentedOnes() throws {
        let configuration = SinkConfiguration()
        #expect(configuration.host == "127.0.0.1" && configuration.port == 0)
        #expect(configuration.hashBodies && !configuration.keepBodiesInMemory && configuration.outputDirectory == nil)
        #expect(configuration.maxHeaderBytes == 16_384 && configuration.maxChunkLineBytes == 1_024)
        #expect(configuration.maxConnections == 1_024 && configuration.idleTimeout == .seconds(60))
        try configuration.validate()
    }

    /// Out-of-range values are refused before anything is bound.
    @Test func outOfRangeValuesAreRefused() {
        let invalid = [
            SinkConfiguration(maxHeaderBytes: 10),
            SinkConfiguration(maxChunkLineBytes: 0),
            SinkConfiguration(maxConnections: 0),
            SinkConfiguration(idleTimeout: .zero),
            SinkConfiguration(readBufferSize: 10),
            SinkConfiguration(host: ""),
        ]
        for configuration in invalid {
            #expect(throws: SinkError.self) { _ = try SinkServer(configuration: configuration) }
        }
    }
}
