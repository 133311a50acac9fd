import StreamUpHTTP
import StreamUpSystem

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
/// table (at most every ``sweepInterval``, on creations and from the accept thread; always on
/// ``count``) ends the others and removes them. A full table is swept (at most once a second)
/// before a creation is refused.
///
/// Thread safety: the table is guarded by the `table` mutex, never held while an upload's own
/// lock is taken; the count against the limit and the time of the last sweep are behind the
/// `counts` mutex, a second one (so a creation takes the table's lock once, as a completion
/// does); callable from any thread.
final class ResumableUploads: Sendable {
    enum Creation {
        case created(ResumableUpload)
        /// The upload's stream offset is past the end of its stream; nothing was created.
        case gap(expectedOffset: Int)
        /// ``ResumableUploads/limit`` uploads are open; nothing was created.
        case full(limit: Int)
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
    private let table = Mutex<[String: ResumableUpload]>([:])
    /// What is counted beside the table, without its lock.
    ///
    /// Thread safety: a value type, kept behind `counts`.
    private struct Counts {
        /// Uploads in the table plus creations under way, counted against ``limit`` (a creation
        /// takes the table's lock once, to insert).
        var occupied = 0
        /// When the last sweep started: checked (and claimed) without the table's lock, so a
        /// creation that finds no sweep due walks no table.
        var lastSweep: ContinuousClock.Instant
    }

    private let counts = Mutex(Counts(lastSweep: .now))

    init(directory: String?, streams: StreamStore?, hashBodies: Bool, limit: Int, expiry: Duration) {
        self.directory = directory
        self.streams = streams
        self.hashBodies = hashBodies
        self.limit = limit
        self.expiry = expiry
        sweepInterval = min(expiry / 8, .seconds(60))
    }

    /// Creates an upload attached to `attachment`: bound to `stream` (its id and the stream
    /// offset of the upload's first byte) when given and streams are stored, otherwise written
    /// to `upload-TOKEN.partial` when there is an output directory. Refused when ``limit``
    /// uploads are open even after a sweep.
    func create(stream: (id: String, offset: Int)?, attaching attachment: ResumableUpload.Attachment) throws(SinkError) -> Creation {
        sweepExpired()
        // A full table is swept again at most once a second: a flood of refused creations must
        // not make every refusal walk the whole table.
        guard reserveSlot() || (sweepExpired(every: min(sweepInterval, .seconds(1))) && reserveSlot()) else {
            return .full(limit: limit)
        }
        let token = ResumableUploads.newToken()
        let destination: ResumableUpload.Destination
        do throws(SinkError) {
            if let stream, let streams {
                switch try StreamAppender.open(streams, streamID: stream.id, base: stream.offset) {
                case .success(let appender): destination = .stream(appender)
                case .failure(let gap):
                    release(1)
                    return .gap(expectedOffset: gap.expectedOffset)
                }
            } else if let directory {
                destination = .file(try BodyFile(directory: directory, baseName: "upload-\(token)"))
            } else {
                destination = .none
            }
        } catch {
            release(1)
            throw error
        }
        let upload = ResumableUpload(token: token, destination: destination, hash: hashBodies)
        // Cannot fail: the new upload is free, at offset 0, and its file is open.
        _ = try upload.attach(attachment, at: 0)
        table.withLock { $0[token] = upload }
        return .created(upload)
    }

    /// Takes a slot for a creation; false when ``limit`` uploads are open or being created.
    private func reserveSlot() -> Bool {
        let limit = limit
        return counts.withLock { counts in
            guard counts.occupied < limit else { return false }
            counts.occupied += 1
            return true
        }
    }

    /// Gives back `count` slots (uploads forgotten, or creations that did not happen).
    private func release(_ count: Int) {
        counts.withLock { $0.occupied -= count }
    }

    /// The upload called `token`, if the sink knows it and it has not expired.
    func upload(_ token: String) -> ResumableUpload? {
        guard let upload = table.withLock({ $0[token] }) else { return nil }
        if upload.expireIfIdle(at: .now, after: expiry) {
            remove(upload)
            return nil
        }
        return upload
    }

    /// Ends the uploads idle for ``expiry`` and forgets them, if the last sweep was at least
    /// `interval` ago (``sweepInterval`` unless given; `.zero` sweeps now). Returns whether it swept.
    @discardableResult
    func sweepExpired(every interval: Duration? = nil) -> Bool {
        let now = ContinuousClock.now
        let interval = interval ?? sweepInterval
        let due = counts.withLock { counts in
            guard now - counts.lastSweep >= interval else { return false }
            counts.lastSweep = now
            return true
        }
        guard due else { return false }
        let candidates = table.withLock { Array($0.values) }
        for upload in candidates where upload.expireIfIdle(at: now, after: expiry) {
            remove(upload)
        }
        return true
    }

    /// Forgets a completed upload.
    func remove(_ token: String) {
        if table.withLock({ $0.removeValue(forKey: token) }) != nil {
            release(1)
        }
    }

    /// Forgets `upload` if the table still holds that very upload under its token.
    private func remove(_ upload: ResumableUpload) {
        let removed = table.withLock { table in
            guard table[upload.token] === upload else { return false }
            table.removeValue(forKey: upload.token)
            return true
        }
        if removed {
            release(1)
        }
    }

    /// Cancels upload `token`: forgets it, cuts any request appending to it and removes its
    /// file (bytes already merged into a stream stay there). False when unknown.
    func cancel(_ token: String) -> Bool {
        guard let upload = table.withLock({ $0.removeValue(forKey: token) }) else { return false }
        release(1)
        return upload.end(removingFile: true)
    }

    /// Forgets every upload, as a restart would: requests appending to them are cut (except
    /// `sparing`), their files keep the `.partial` suffix. Returns how many were forgotten.
    @discardableResult
    func forgetAll(sparing: ResumableUpload.Attachment? = nil) -> Int {
        let all = table.withLock { table in
            let all = Array(table.values)
            table.removeAll()
            return all
        }
        release(all.count)
        for upload in all {
            upload.end(removingFile: false, sparing: sparing)
        }
        return all.count
    }

    /// How many uploads the sink knows, after forgetting the expired ones.
    var count: Int {
        sweepExpired(every: .zero)
        return table.withLock { $0.count }
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
