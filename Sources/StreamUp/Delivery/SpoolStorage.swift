import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A replay buffer's bytes on disk, so that what the server has not acknowledged survives a
/// crash or a restart of streamup, and a long outage does not have to fit in memory.
///
/// A spool directory holds:
/// - `OFFSET.spool` files (the 20-digit stream offset of their first byte), each at most
///   ``fileBytes`` long, written in order; a file is deleted once every byte in it is acknowledged;
/// - `spool.json`: the stream's id, the acknowledged offset, and the resumable upload in use
///   (written atomically at each acknowledgement);
/// - `lock`: held with `flock` while a process uses the spool, so two cannot share it.
///
/// On open, bytes from the acknowledged offset to the end of the last file are pending: the
/// uploader sends them first, under the same stream id and offsets, then what the producer
/// writes next. A spool with nothing pending starts a new stream.
///
/// Bytes are written with `pwrite` and not `fsync`ed one by one: they survive the process being
/// killed (they are in the kernel), not a power cut of the machine.
///
/// Thread safety: called only under the replay buffer's lock (``ReplayStorage``), apart from
/// ``open(directory:capacity:streamID:)`` and ``record``/``saveUpload(_:)``, which the uploader
/// calls before the pump starts or from its delivery task; `recordLock` guards the record.
final class SpoolStorage: ReplayStorage, @unchecked Sendable {
    /// What `spool.json` holds.
    struct Record: Codable, Equatable {
        var streamID: String
        var acknowledged: Int
        /// The resumable upload the stream is being appended to, if any.
        var upload: ResumableUploadReference?
    }

    private struct SpoolFile {
        let start: Int
        var size: Int
        let descriptor: CInt
        var end: Int { start + size }
    }

    let directory: String
    let capacity: Int
    var isDurable: Bool { true }
    /// Largest size of one spool file.
    let fileBytes: Int
    private var files: [SpoolFile]
    private let lockDescriptor: CInt
    private let recordLock = NSLock()
    private var currentRecord: Record

    /// The pending bytes and the record found when the spool was opened.
    let recovered: (start: Int, end: Int, record: Record)

    private init(directory: String, capacity: Int, fileBytes: Int, files: [SpoolFile], lock: CInt, record: Record, end: Int) {
        self.directory = directory
        self.capacity = capacity
        self.fileBytes = fileBytes
        self.files = files
        self.lockDescriptor = lock
        self.currentRecord = record
        self.recovered = (record.acknowledged, end, record)
    }

    deinit {
        for file in files { SystemCall.close(file.descriptor) }
        SystemCall.close(lockDescriptor)
    }

    /// Opens (or creates) the spool in `directory`, holding at most `capacity` unacknowledged
    /// bytes (more if an earlier run left more pending). A new stream gets `streamID`.
    /// - Throws: ``StreamUpError`` (`.io`) when the directory cannot be used, another process
    ///   holds it, or its files are damaged (bytes missing in the middle).
    static func open(directory: String, capacity: Int, streamID: String) throws(StreamUpError) -> SpoolStorage {
        guard capacity > 0 else { throw StreamUpError(.invalidConfiguration, "the spool needs a positive size") }
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw StreamUpError(.io, "cannot create spool directory \(directory)", errno: errno)
        }
        let lock = try SystemCall.retrying("cannot open \(directory)/lock") {
            SystemCall.open("\(directory)/lock", O_RDWR | O_CREAT | O_CLOEXEC)
        }
        if flock(lock, LOCK_EX | LOCK_NB) != 0 {
            SystemCall.close(lock)
            throw StreamUpError(.io, "spool \(directory) is in use by another streamup process")
        }
        do throws(StreamUpError) {
            var record: Record
            do {
                let bytes = try AtomicFile.contents(at: "\(directory)/spool.json")
                record = try bytes.map { try JSONDecoder().decode(Record.self, from: Data($0)) }
                    ?? Record(streamID: streamID, acknowledged: 0)
            } catch let error as StreamUpError {
                throw error
            } catch {
                throw StreamUpError(.io, "\(directory)/spool.json is damaged (\(error)); move the spool away to start afresh")
            }
            var files = try openFiles(in: directory)
            // Files wholly acknowledged (a crash before their deletion) are not needed.
            while let first = files.first, first.end <= record.acknowledged {
                SystemCall.close(first.descriptor)
                unlink(path(of: first.start, in: directory))
                files.removeFirst()
            }
            let end = files.last?.end ?? record.acknowledged
            if files.isEmpty || end <= record.acknowledged {
                // Nothing pending: a new stream.
                for file in files {
                    SystemCall.close(file.descriptor)
                    unlink(path(of: file.start, in: directory))
                }
                files = []
                record = Record(streamID: streamID, acknowledged: 0)
            } else {
                var expected = record.acknowledged
                for file in files {
                    guard file.start <= expected else {
                        throw StreamUpError(.io, "spool \(directory) is damaged: bytes \(expected)..<\(file.start) are missing; move it away to start afresh")
                    }
                    expected = file.end
                }
            }
            try save(record, in: directory)
            let held = max(0, end - record.acknowledged)
            return SpoolStorage(
                directory: directory, capacity: max(capacity, held), fileBytes: max(1, min(capacity / 4, 64 << 20)),
                files: files, lock: lock, record: record, end: files.isEmpty ? 0 : end)
        } catch {
            SystemCall.close(lock)
            throw error
        }
    }

    /// The stream id, acknowledged offset and resumable upload, as last saved.
    var record: Record { recordLock.withLock { currentRecord } }

    /// Remembers the resumable upload the stream is appended to (nil: none), for the next start.
    func saveUpload(_ upload: ResumableUploadReference?) throws(StreamUpError) {
        let record = recordLock.withLock {
            currentRecord.upload = upload
            return currentRecord
        }
        try Self.save(record, in: directory)
    }

    func write(_ source: UnsafeRawBufferPointer, at offset: Int) throws(StreamUpError) -> Int {
        if files.last.map({ $0.end != offset || $0.size >= fileBytes }) ?? true {
            let path = Self.path(of: offset, in: directory)
            let descriptor = try SystemCall.retrying("cannot create \(path)") {
                SystemCall.open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC)
            }
            files.append(SpoolFile(start: offset, size: 0, descriptor: descriptor))
        }
        let last = files.count - 1
        let count = min(source.count, fileBytes - files[last].size)
        let file = files[last]
        let written = try SystemCall.retrying("spool write to \(Self.path(of: file.start, in: directory)) failed") {
            pwrite(file.descriptor, source.baseAddress!, count, off_t(file.size))
        }
        files[last].size += written
        return written
    }

    func read(at offset: Int, into destination: UnsafeMutableRawBufferPointer) throws(StreamUpError) -> Int {
        guard let file = files.first(where: { $0.start <= offset && offset < $0.end }) else {
            throw StreamUpError(.io, "spool \(directory) has no byte at offset \(offset)")
        }
        let count = min(destination.count, file.end - offset)
        let read = try SystemCall.retrying("spool read from \(Self.path(of: file.start, in: directory)) failed") {
            pread(file.descriptor, destination.baseAddress!, count, off_t(offset - file.start))
        }
        guard read > 0 else { throw StreamUpError(.io, "spool file \(Self.path(of: file.start, in: directory)) is shorter than expected") }
        return read
    }

    func release(below offset: Int) throws(StreamUpError) {
        while let first = files.first, first.end <= offset {
            SystemCall.close(first.descriptor)
            unlink(Self.path(of: first.start, in: directory))
            files.removeFirst()
        }
        let record = recordLock.withLock {
            currentRecord.acknowledged = offset
            return currentRecord
        }
        try Self.save(record, in: directory)
    }

    private static func path(of start: Int, in directory: String) -> String {
        let digits = String(start)
        return "\(directory)/\(String(repeating: "0", count: max(0, 20 - digits.count)))\(digits).spool"
    }

    private static func save(_ record: Record, in directory: String) throws(StreamUpError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(record) else { return }
        do {
            try AtomicFile.replace(at: "\(directory)/spool.json", with: Array(data))
        } catch let error as StreamUpError {
            throw error
        } catch {
            throw StreamUpError(.io, "cannot save \(directory)/spool.json: \(error)")
        }
    }

    /// The `*.spool` files in `directory`, opened, in offset order.
    private static func openFiles(in directory: String) throws(StreamUpError) -> [SpoolFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw StreamUpError(.io, "cannot list spool directory \(directory): \(error)")
        }
        var files: [SpoolFile] = []
        for name in names where name.hasSuffix(".spool") {
            guard let start = Int(name.dropLast(6)), start >= 0 else { continue }
            let path = "\(directory)/\(name)"
            let descriptor = try SystemCall.retrying("cannot open \(path)") { SystemCall.open(path, O_RDWR | O_CLOEXEC) }
            var status = stat()
            if fstat(descriptor, &status) != 0 {
                SystemCall.close(descriptor)
                throw StreamUpError(.io, "cannot stat \(path)", errno: errno)
            }
            files.append(SpoolFile(start: start, size: Int(status.st_size), descriptor: descriptor))
        }
        return files.sorted { $0.start < $1.start }
    }
}
