import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

/// What a reopened spool says about where its bytes came from: also the bytes the server
/// acknowledged after the last save of the positions (the files stay until the saved
/// positions cover them), else a restart would read those lines again.
@Suite struct SpoolRecoveryTests {
    private let a = SourceID(device: 1, inode: 10, fingerprint: 1)
    private let b = SourceID(device: 1, inode: 11, fingerprint: 2)

    /// Writes `text` at the spool's end, marked as `source` from `position`.
    private func commit(_ spool: SpoolStorage, _ text: String, at offset: Int, _ source: SourceID, from position: Int64) throws {
        let bytes = Array(text.utf8)
        let space = spool.writableSpace(at: offset, maxLength: bytes.count)
        bytes.withUnsafeBytes { space.copyMemory(from: $0) }
        try spool.commit(space, count: bytes.count, at: offset, mark: .verbatim(source, from: position))
    }

    /// Runs `body` with a spool path (not yet created) in a temporary directory removed afterwards.
    private func withDirectory(_ body: (String) throws -> Void) throws {
        let temporary = try TemporaryDirectory()
        try withExtendedLifetime(temporary) { try body(temporary.file("spool")) }
    }

    /// Everything acknowledged, positions saved before that: a new stream starts, and the old
    /// one's sources come back so the positions move past what was delivered.
    @Test func acknowledgedBytesPastTheSavedPositionsAreReported() throws {
        try withDirectory { directory in
            do {
                let spool = try SpoolStorage.open(directory: directory, capacity: 1 << 20, streamID: "first")
                try commit(spool, "a1\n", at: 0, a, from: 0)
                try commit(spool, "b1\n", at: 3, b, from: 0)
                try commit(spool, "a2\n", at: 6, a, from: 3)
                // Acknowledged up to the end; the saved positions covered nothing yet.
                try spool.acknowledge(upTo: 9, releasingBelow: 0, written: 9)
            }
            let reopened = try SpoolStorage.open(directory: directory, capacity: 1 << 20, streamID: "second")
            #expect(reopened.recovered.streamID == "second")
            let saved = SourceState(
                streamID: "first", streamOffset: 0,
                sources: [
                    SourcePosition(source: a, path: "a.log", offset: 0), SourcePosition(source: b, path: "b.log", offset: 0),
                ])
            let folded = StreamUploader.fold(reopened.recovered.sources, onto: saved, streamID: reopened.recovered.streamID)
            #expect(Dictionary(uniqueKeysWithValues: folded.sources.map { ($0.source, $0.offset) }) == [a: 6, b: 3])
        }
    }

    /// Some bytes pending: the acknowledged ones before them are reported too, with the
    /// pending ones, in stream order.
    @Test func acknowledgedAndPendingBytesAreBothReported() throws {
        try withDirectory { directory in
            do {
                let spool = try SpoolStorage.open(directory: directory, capacity: 1 << 20, streamID: "first")
                try commit(spool, "a1\n", at: 0, a, from: 0)
                try commit(spool, "b1\n", at: 3, b, from: 0)
                try spool.acknowledge(upTo: 6, releasingBelow: 0, written: 6)
                try commit(spool, "a2\n", at: 6, a, from: 3)
            }
            let reopened = try SpoolStorage.open(directory: directory, capacity: 1 << 20, streamID: "second")
            #expect(reopened.recovered.streamID == "first")
            #expect(reopened.recovered.sources.map(\.source) == [a, b, a])
            #expect(reopened.recovered.sources.map(\.end) == [3, 3, 6])
        }
    }
}
