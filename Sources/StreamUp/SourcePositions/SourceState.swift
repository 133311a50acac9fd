import Foundation
import StreamUpSystem

/// What a ``StreamUploader`` with a state file remembers of its producer's sources, to
/// continue exactly there after a restart: where each source stands, and which stream offset
/// that stands for (a spool may hold the stream past it). Saved as JSON:
/// `{"sources":[{"offset":…,"path":"…","source":{"device":…,"fingerprint":…,"inode":…}}],"streamID":"…","streamOffset":…,"version":2}`,
/// and with time bases `"times":[{"bases":[{"nanoseconds":…,"start":…}],"source":{…}}]`.
///
/// A state saved by earlier versions of `streamup tail` (one followed file) is read too.
///
/// Thread safety: a value type.
package struct SourceState: Codable, Sendable, Equatable {
    package var version = 2
    /// The stream the positions belong to (`Streamup-Stream-Id`).
    package var streamID: String?
    /// The stream offset the positions stand for.
    package var streamOffset: Int?
    /// Each source's position, the most recently read last.
    package var sources: [SourcePosition]
    /// The time bases of the records past the positions that may have been sent
    /// (``SourceTimes``); nil when none are kept.
    package var times: [SourceTimes.Saved]?

    package init(streamID: String? = nil, streamOffset: Int? = nil, sources: [SourcePosition], times: [SourceTimes.Saved]? = nil) {
        self.streamID = streamID
        self.streamOffset = streamOffset
        self.sources = sources
        self.times = times
    }

    /// Reads the state saved at `file`; nil when there is none (a first run).
    /// - Throws: ``StreamUpError`` `.io` when it cannot be read, `.invalidConfiguration` when it
    ///   is not a state file.
    package static func load(from file: String) throws -> SourceState? {
        guard let bytes = try AtomicFile.contents(at: file, throwing: StreamUpError.self) else { return nil }
        let data = Data(bytes)
        if let state = try? JSONDecoder().decode(SourceState.self, from: data), state.version == 2 { return state }
        if let old = try? JSONDecoder().decode(OneFileState.self, from: data) {
            return SourceState(
                streamID: old.streamID, streamOffset: old.streamOffset,
                sources: [SourcePosition(source: SourceID(device: old.device, inode: old.inode), path: old.path, offset: old.offset)])
        }
        throw StreamUpError(.invalidConfiguration, "\(file) is not a streamup state file (move it away to start afresh)")
    }

    /// When the state at `file` was last saved (its modification time: each save replaces the
    /// file); nil when there is none. A file a source's name held after that came while nobody
    /// followed it.
    package static func lastSaved(at file: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
    }

    /// Saves the state at `file` atomically (a temporary file, `fsync`, `rename`).
    /// - Throws: ``StreamUpError`` `.io` when the file cannot be written.
    package func save(to file: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let json = try? encoder.encode(self) else { return }
        try AtomicFile.replace(at: file, with: Array(json) + [0x0A], throwing: StreamUpError.self)
    }

    /// The state earlier versions saved for one followed file:
    /// `{"device":…,"inode":…,"offset":…,"path":"…","streamID":"…","streamOffset":…}`.
    ///
    /// Thread safety: a value type.
    private struct OneFileState: Decodable {
        var path: String
        var device: UInt64
        var inode: UInt64
        var offset: Int64
        var streamID: String?
        var streamOffset: Int?
    }
}
