extension StreamUploader {
    /// Where a stream's records end, so that every acknowledged request carries whole records.
    ///
    /// Receivers that read whole requests (ClickHouse, Loki, Elasticsearch, Splunk, …) reject a
    /// request that ends in the middle of a record, and with it every record it carried.
    ///
    /// Thread safety: a value type.
    public enum RecordMode: Sendable, Equatable {
        /// Records are lines: a request ends only just after a `\n` (or at the end of the input).
        case lines
        /// No records: a request may end after any byte (the stream is opaque bytes).
        case rawBytes
    }
}

/// The package's name for ``StreamUploader/RecordMode``.
package typealias RecordMode = StreamUploader.RecordMode
