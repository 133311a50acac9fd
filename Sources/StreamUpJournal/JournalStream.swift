import Foundation
import StreamUp

/// The stream a journal's records go in when the state file keeps their positions and the
/// records are held in memory: the same stream after a restart, so that the entries read again
/// (sent, but not acknowledged, when streamup ended) go at the offsets they were sent at and a
/// receiver that keeps one copy per offset (`streamup sink`, by `Streamup-Offset`) stores them
/// once. The uploader continues a stream whose id equals the one its state file saved
/// (`StreamUploader.Options.streamID`).
///
/// The id ends in a digest of how records are made (``JournalRecords/digest()``): entries read
/// again make the same bytes only with the same record options, so another format, preset,
/// field, record size or filter starts a stream of its own (`UUID-jDIGEST`).
///
/// Thread safety: stateless.
package enum JournalStream {
    /// The stream id for records of `digest`: the one `saved` names when it was made for the
    /// same records, else a new one.
    package static func id(continuing saved: SourceState?, digest: UInt64) -> String {
        let suffix = "-j" + String(digest, radix: 16)
        if let id = saved?.streamID, id.hasSuffix(suffix) { return id }
        return UUID().uuidString.lowercased() + suffix
    }
}
