extension UploadConfiguration {
    /// How each request's body is made from the records it carries: encoded as one binary OTLP
    /// request (`OTLPExport`), wrapped into one document (an `Envelope`: a JSON array, Loki's
    /// `{"streams":…}`, a multipart form), and compressed with gzip. Every request is complete on its own, and a resent segment is wrapped and
    /// compressed exactly as the first time (the stages run again over the same records).
    ///
    /// Thread safety: a value type.
    public struct BodyEncoding: Sendable, Equatable {
        /// Wraps each request's records (nil: the records as they are).
        package var envelope: Envelope?
        /// Encodes each request's records, OTLP/JSON `LogRecord`s, as one binary OTLP
        /// `ExportLogsServiceRequest` (nil: the records stay text). It runs first, below the
        /// envelope and gzip, and only in segments: a protobuf message gives its length before
        /// its bytes, so a live request cannot carry one.
        package var otlpExport: OTLPExport?
        /// Compresses each request with gzip (`Content-Encoding: gzip`): one complete gzip member
        /// per acknowledged segment; a single request is flushed (`Z_SYNC_FLUSH`) when it would
        /// wait for input, and at least every 250 ms, never per line.
        public var gzip = false
        /// The zlib level, 0 to 9 (1: fast, about 3.5× on log lines; 6: about 4.4×, three times the
        /// CPU); another level is refused when an uploader is made.
        public var gzipLevel: Int32 = 1

        package init(envelope: Envelope? = nil, gzip: Bool = false) {
            self.envelope = envelope
            self.gzip = gzip
        }

        /// Whether the body is the stream's bytes as they are (then `Streamup-Offset` counts body
        /// bytes and a receiver can join segments byte for byte).
        package var isIdentity: Bool { envelope == nil && otlpExport == nil && !gzip }

        /// Why a body whose records hold `Envelope.recordsMustNotContain` fails.
        static let boundaryInRecords =
            "a record contains the multipart boundary, which no input holds by chance: the request was aborted rather than sent as a broken form; remove that text from the input (a new run draws a new boundary)"

        /// The stage URLSession reads: `source`, wrapped and compressed as this encoding says;
        /// `origin`: where `source` starts in its stream, for an envelope that names records.
        func stages(over source: any BodySource, origin: StreamOrigin? = nil) -> any BodySource {
            var top = source
            if let otlpExport { top = OTLPExportStage(over: top, export: otlpExport) }
            if let envelope {
                if !envelope.recordsMustNotContain.isEmpty {
                    top = ForbiddenSequenceStage(over: top, sequence: envelope.recordsMustNotContain, message: Self.boundaryInRecords)
                }
                if let streams = envelope.lokiStreams {
                    top = LokiStreamsStage(over: top, streams: streams, head: envelope.head, tail: envelope.tail)
                } else {
                    top = EnvelopeStage(over: top, envelope: envelope, origin: origin)
                }
            }
            if gzip {
                // Levels are checked when the configuration is validated.
                if let compressed = try? GzipStage(over: top, level: gzipLevel) { top = compressed }
            }
            return top
        }
    }
}

/// The package's name for ``UploadConfiguration/BodyEncoding``.
package typealias BodyEncoding = UploadConfiguration.BodyEncoding
