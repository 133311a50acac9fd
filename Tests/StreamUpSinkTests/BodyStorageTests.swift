import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

/// File naming and the `.partial` → `.body` life of a stored body.
struct BodyStorageTests {
    /// Names are the zero-padded sequence and a file-system-safe method.
    @Test func namesArePaddedSequenceAndSafeMethod() {
        #expect(BodyStorage.baseName(sequence: 7, method: "POST") == "00000007-POST")
        #expect(BodyStorage.baseName(sequence: 123_456_789, method: "PUT") == "123456789-PUT")
        #expect(BodyStorage.baseName(sequence: 1, method: "A|B*C.D") == "00000001-A_B_C_D")
        #expect(BodyStorage.baseName(sequence: 1, method: String(repeating: "X", count: 40)).count == 8 + 1 + 16)
    }

    /// Only names that follow the scheme count when scanning the directory.
    @Test func sequenceIsReadOnlyFromNamesThatFollowTheScheme() {
        #expect(BodyStorage.sequence(inFileName: "00000041-PUT.body") == 41)
        #expect(BodyStorage.sequence(inFileName: "00000041-PUT.partial") == 41)
        #expect(BodyStorage.sequence(inFileName: "41-PUT.body") == nil)
        #expect(BodyStorage.sequence(inFileName: "notes.txt") == nil)
        #expect(BodyStorage.sequence(inFileName: "00000041.body") == nil)
    }

    /// A missing directory is created, and earlier files set the starting point.
    @Test func storageCreatesItsDirectoryAndFindsTheHighestSequence() throws {
        let parent = try TemporaryDirectory()
        let path = parent.path + "/nested/out"
        #expect(try BodyStorage(directory: path).highestExistingSequence == 0)
        _ = FileManager.default.createFile(atPath: path + "/00000009-POST.partial", contents: nil)
        _ = FileManager.default.createFile(atPath: path + "/00000003-POST.body", contents: nil)
        #expect(try BodyStorage(directory: path).highestExistingSequence == 9)
    }

    /// A completed file is renamed to `.body`; an abandoned one stays `.partial`.
    @Test func completedFilesAreRenamedAndAbandonedOnesStayPartial() throws {
        let directory = try TemporaryDirectory()
        let storage = try BodyStorage(directory: directory.path)
        let done = try storage.createFile(sequence: 1, method: "POST")
        try Array("abc".utf8).withUnsafeBytes { try done.write($0) }
        #expect(try done.complete() == directory.path + "/00000001-POST.body")
        let cut = try storage.createFile(sequence: 2, method: "POST")
        #expect(cut.abandon() == directory.path + "/00000002-POST.partial")
        #expect(try directory.fileNames() == ["00000001-POST.body", "00000002-POST.partial"])
        #expect(try String(contentsOfFile: directory.path + "/00000001-POST.body", encoding: .utf8) == "abc")
    }

    /// Creating a file that already exists fails with a storage error instead of overwriting.
    @Test func existingFileIsNeverOverwritten() throws {
        let directory = try TemporaryDirectory()
        let storage = try BodyStorage(directory: directory.path)
        let first = try storage.createFile(sequence: 5, method: "POST")
        defer { _ = first.abandon() }
        #expect {
            _ = try storage.createFile(sequence: 5, method: "POST")
        } throws: { error in
            (error as? SinkError)?.code == .storage && (error as? SinkError)?.errno == EEXIST
        }
    }
}
