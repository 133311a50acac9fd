import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// The de-duplicated streams' store on its own (files, no sockets): what it keeps in memory
/// as streams come and go.
@Suite struct StreamStoreTests {
    private static let limits = StreamState.Limits(bytes: 1 << 20, pieces: 64, sinkBytes: 1 << 30, sinkPieces: 1_024)

    /// Writes `text` as the body file of request `sequence` and merges it into stream `id` at `offset`.
    private static func merge(_ store: StreamStore, id: String, offset: Int, _ text: String, sequence: Int) throws -> StreamStore.Outcome {
        let path = "\(store.directory)/\(BodyStorage.baseName(sequence: sequence, method: "POST")).body"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return try store.merge(streamID: id, offset: offset, bodyPath: path, bodyLength: text.utf8.count)
    }

    /// A sink that has seen hundreds of streams keeps the bookkeeping of none that is done
    /// (memory stays flat however many streams come); a stream holding a piece aside is kept
    /// until the piece joins; pieces found on disk count against the sink's bound from the start.
    @Test func streamsThatHoldNothingAsideAreNotKeptInMemory() throws {
        let directory = try TemporaryDirectory()
        let store = StreamStore(directory: directory.path, limits: Self.limits)
        for index in 0..<200 {
            #expect(
                try Self.merge(store, id: "s\(index)", offset: 0, "line \(index)\n", sequence: index + 1) == .appended(length: "line \(index)\n".utf8.count))
        }
        #expect(store.entryCount == 0)
        #expect(try Self.merge(store, id: "s7", offset: 7, "again\n", sequence: 3_000) == .appended(length: 13))
        #expect(try Self.merge(store, id: "gap", offset: 5, "later\n", sequence: 3_001) == .heldAside(length: 0))
        #expect(store.entryCount == 1)
        #expect(store.heldAside == StreamState.Totals(bytes: 6, pieces: 1))
        let restarted = StreamStore(directory: directory.path, limits: Self.limits)
        #expect(restarted.heldAside == StreamState.Totals(bytes: 6, pieces: 1))
        #expect(try Self.merge(restarted, id: "gap", offset: 0, "first", sequence: 3_002) == .appended(length: 11))
        #expect(restarted.entryCount == 0 && restarted.heldAside == StreamState.Totals())
        #expect(try String(contentsOfFile: "\(directory.path)/stream-s7.body", encoding: .utf8) == "line 7\nagain\n")
        #expect(try String(contentsOfFile: "\(directory.path)/stream-gap.body", encoding: .utf8) == "firstlater\n")
        #expect(try directory.fileNames().count == 201)
    }
}
