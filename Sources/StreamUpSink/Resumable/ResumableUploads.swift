import Synchronization

/// The server's resumable uploads by token, in memory only: a restarted sink (or the
/// ``SinkFaults/forgetUploadsAfterBytes`` fault) knows none of them, and every request for one
/// is answered `404`. Tokens are 128 random bits in hex, so an upload URL cannot be guessed.
///
/// An upload leaves the table when it completes, is cancelled, is forgotten or expires; a
/// request still holding it then finds it ended (see ``ResumableUpload``).
///
/// Bounds, against a client creating uploads and never coming back: at most ``limit`` uploads
/// (counting creations under way); a creation over it is refused (``Creation/full``). An upload
/// idle for ``expiry`` ends: a lookup of it finds it expired at once, and a sweep of the whole
/// table (at most every ``sweepInterval``, on creations, on ``count`` and from the accept thread)
/// ends the others and removes them. A full table is swept before a creation is refused.
///
/// Thread safety: the table is guarded by the `table` mutex, never held while an upload's own
/// lock is taken; callable from any thread.
final class ResumableUploads: Sendable {
    enum Creation {
        case created(ResumableUpload)
        /// The upload's stream offset is past the end of its stream; nothing was created.
        case gap(expectedOffset: Int)
        /// ``ResumableUploads/limit`` uploads are open; nothing was created.
        case full(limit: Int)
    }

    private struct Table {
        var uploads: [String: ResumableUpload] = [:]
        /// Creations under way: counted against the limit, not in `uploads` yet.
        var reserved = 0
        var nextSweep: ContinuousClock.Instant
    }

    /// Where upload files go; `nil` stores nothing (bytes are only counted and hashed).
    let directory: String?
    /// Present with an output directory: uploads created with stream headers write into it.
    let streams: StreamStore?
    let hashBodies: Bool
    /// Most uploads open at once (``SinkConfiguration/maxUploads``).
    let limit: Int
    /// Idle time after which an upload ends (``SinkConfiguration/uploadExpiry``).
    let expiry: Duration
    /// Least time between two sweeps of the whole table: an eighth of the expiry, at most a minute.
    let sweepInterval: Duration
    private let table: Mutex<Table>

    init(directory: String?, streams: StreamStore?, hashBodies: Bool, limit: Int, expiry: Duration) {
        self.directory = directory
        self.streams = streams
        self.hashBodies = hashBodies
        self.limit = limit
        self.expiry = expiry
        sweepInterval = min(expiry / 8, .seconds(60))
        table = Mutex(Table(nextSweep: .now))
    }

    /// Creates an upload attached to `attachment`: bound to `stream` (its id and the stream
    /// offset of the upload's first byte) when given and streams are stored, otherwise written
    /// to `upload-TOKEN.partial` when there is an output directory. Refused when ``limit``
    /// uploads are open even after a sweep.
    func create(stream: (id: String, offset: Int)?, attaching attachment: ResumableUpload.Attachment) throws(SinkError) -> Creation {
        sweepExpired()
        guard reserveSlot() || (sweepExpired(force: true) && reserveSlot()) else {
            return .full(limit: limit)
        }
        let token = ResumableUploads.newToken()
        let destination: ResumableUpload.Destination
        do throws(SinkError) {
            if let stream, let streams {
                switch try StreamAppender.open(streams, streamID: stream.id, base: stream.offset) {
                case .success(let appender): destination = .stream(appender)
                case .failure(let gap):
                    table.withLock { $0.reserved -= 1 }
                    return .gap(expectedOffset: gap.expectedOffset)
                }
            } else if let directory {
                destination = .file(try BodyFile(directory: directory, baseName: "upload-\(token)"))
            } else {
                destination = .none
            }
        } catch {
            table.withLock { $0.reserved -= 1 }
            throw error
        }
        let upload = ResumableUpload(token: token, destination: destination, hash: hashBodies)
        // Cannot fail: the new upload is free, at offset 0, and its file is open.
        _ = try upload.attach(attachment, at: 0)
        table.withLock { table in
            table.reserved -= 1
            table.uploads[token] = upload
        }
        return .created(upload)
    }

    /// Takes a slot for a creation; false when ``limit`` uploads are open or being created.
    private func reserveSlot() -> Bool {
        table.withLock { table in
            guard table.uploads.count + table.reserved < limit else { return false }
            table.reserved += 1
            return true
        }
    }

    /// The upload called `token`, if the sink knows it and it has not expired.
    func upload(_ token: String) -> ResumableUpload? {
        guard let upload = table.withLock({ $0.uploads[token] }) else { return nil }
        if upload.expireIfIdle(at: .now, after: expiry) {
            remove(upload)
            return nil
        }
        return upload
    }

    /// Ends the uploads idle for ``expiry`` and forgets them; only when a sweep is due unless
    /// `force`. Returns whether it swept.
    @discardableResult
    func sweepExpired(force: Bool = false) -> Bool {
        let now = ContinuousClock.now
        let candidates: [ResumableUpload]? = table.withLock { table in
            guard force || now >= table.nextSweep else { return nil }
            table.nextSweep = now + sweepInterval
            return Array(table.uploads.values)
        }
        guard let candidates else { return false }
        for upload in candidates where upload.expireIfIdle(at: now, after: expiry) {
            remove(upload)
        }
        return true
    }

    /// Forgets a completed upload.
    func remove(_ token: String) {
        _ = table.withLock { $0.uploads.removeValue(forKey: token) }
    }

    /// Forgets `upload` if the table still holds that very upload under its token.
    private func remove(_ upload: ResumableUpload) {
        table.withLock { table in
            if table.uploads[upload.token] === upload {
                table.uploads.removeValue(forKey: upload.token)
            }
        }
    }

    /// Cancels upload `token`: forgets it, cuts any request appending to it and removes its
    /// file (bytes already merged into a stream stay there). False when unknown.
    func cancel(_ token: String) -> Bool {
        guard let upload = table.withLock({ $0.uploads.removeValue(forKey: token) }) else { return false }
        return upload.end(removingFile: true)
    }

    /// Forgets every upload, as a restart would: requests appending to them are cut (except
    /// `sparing`), their files keep the `.partial` suffix. Returns how many were forgotten.
    @discardableResult
    func forgetAll(sparing: ResumableUpload.Attachment? = nil) -> Int {
        let all = table.withLock { table in
            let all = Array(table.uploads.values)
            table.uploads.removeAll()
            return all
        }
        for upload in all {
            upload.end(removingFile: false, sparing: sparing)
        }
        return all.count
    }

    /// How many uploads the sink knows, after forgetting the expired ones.
    var count: Int {
        sweepExpired(force: true)
        return table.withLock { $0.uploads.count }
    }

    /// 32 lower-case hex digits from the system's random generator.
    private static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let digits = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }
}
