import Synchronization

/// The server's resumable uploads by token, in memory only: a restarted sink (or the
/// ``SinkFaults/forgetUploadsAfterBytes`` fault) knows none of them, and every request for one
/// is answered `404`. Tokens are 128 random bits in hex, so an upload URL cannot be guessed.
///
/// An upload leaves the table when it completes, is cancelled or is forgotten; a request still
/// holding it then finds it ended (see ``ResumableUpload``).
///
/// Thread safety: the table is guarded by the `table` mutex, never held while an upload's own
/// lock is taken; callable from any thread.
final class ResumableUploads: Sendable {
    enum Creation {
        case created(ResumableUpload)
        /// The upload's stream offset is past the end of its stream; nothing was created.
        case gap(expectedOffset: Int)
    }

    /// Where upload files go; `nil` stores nothing (bytes are only counted and hashed).
    let directory: String?
    /// Present with an output directory: uploads created with stream headers write into it.
    let streams: StreamStore?
    let hashBodies: Bool
    private let table = Mutex<[String: ResumableUpload]>([:])

    init(directory: String?, streams: StreamStore?, hashBodies: Bool) {
        self.directory = directory
        self.streams = streams
        self.hashBodies = hashBodies
    }

    /// Creates an upload attached to `attachment`: bound to `stream` (its id and the stream
    /// offset of the upload's first byte) when given and streams are stored, otherwise written
    /// to `upload-TOKEN.partial` when there is an output directory.
    func create(stream: (id: String, offset: Int)?, attaching attachment: ResumableUpload.Attachment) throws(SinkError) -> Creation {
        let token = ResumableUploads.newToken()
        let destination: ResumableUpload.Destination
        if let stream, let streams {
            switch try StreamAppender.open(streams, streamID: stream.id, base: stream.offset) {
            case .success(let appender): destination = .stream(appender)
            case .failure(let gap): return .gap(expectedOffset: gap.expectedOffset)
            }
        } else if let directory {
            destination = .file(try BodyFile(directory: directory, baseName: "upload-\(token)"))
        } else {
            destination = .none
        }
        let upload = ResumableUpload(token: token, destination: destination, hash: hashBodies)
        _ = upload.attach(attachment, at: 0)
        table.withLock { $0[token] = upload }
        return .created(upload)
    }

    /// The upload called `token`, if the sink knows it.
    func upload(_ token: String) -> ResumableUpload? {
        table.withLock { $0[token] }
    }

    /// Forgets a completed upload.
    func remove(_ token: String) {
        _ = table.withLock { $0.removeValue(forKey: token) }
    }

    /// Cancels upload `token`: forgets it, cuts any request appending to it and removes its
    /// file (bytes already merged into a stream stay there). False when unknown.
    func cancel(_ token: String) -> Bool {
        guard let upload = table.withLock({ $0.removeValue(forKey: token) }) else { return false }
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
        for upload in all {
            upload.end(removingFile: false, sparing: sparing)
        }
        return all.count
    }

    /// How many uploads the sink knows.
    var count: Int {
        table.withLock { $0.count }
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
