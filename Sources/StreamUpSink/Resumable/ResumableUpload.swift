import StreamUpSystem

/// One upload of the resumable-upload protocol: the bytes held so far, where they go, and which
/// request (if any) is appending to it right now.
///
/// Bytes are written as they arrive, by the one attached request: to `upload-TOKEN.partial` in
/// the output directory (renamed to `.body` on completion), or live into a de-duplicated stream
/// (``StreamAppender``) when the upload was created with stream headers, or nowhere without an
/// output directory. They are hashed when ``SinkConfiguration/hashBodies`` is on.
///
/// Descriptors: the upload's file (or stream file) is open only while a request is attached:
/// opened by the creating request or on attach, closed when the request detaches, completes or
/// is cut. An idle upload holds no descriptor, so a client creating thousands and leaving costs
/// the sink table entries (bounded by ``SinkConfiguration/maxUploads``), not descriptors.
///
/// Expiry: an upload with no request attached and none since ``SinkConfiguration/uploadExpiry``
/// ends on ``expireIfIdle(at:after:)``; see ``ResumableUploads``.
///
/// Attachment and the descriptor rule: a request attaches with its connection's descriptor and
/// detaches *before* its connection closes that descriptor. Whoever takes the upload over (an
/// offset retrieval, a cancellation, a forget) does so under the lock, where the descriptor is
/// therefore still the attached connection's, and shuts it down (`shutdown(2)`, never `close`)
/// so that connection's thread stops reading. An append checks the attachment under the same
/// lock, so no byte of a detached request is ever added after the offset was read.
///
/// Thread safety: all state is guarded by the `state` mutex (file and stream writes happen
/// under it; the stream's own lock is taken inside it, never the other way round); callable
/// from any thread.
final class ResumableUpload: Sendable {
    /// The request appending to an upload: its sequence number and its connection's descriptor.
    ///
    /// Thread safety: a value type.
    struct Attachment: Hashable, Sendable {
        let request: Int
        let descriptor: CInt
    }

    enum AttachOutcome: Equatable {
        case attached
        /// The upload was completed, cancelled or forgotten meanwhile.
        case ended
        /// The request's `Upload-Offset` is not the bytes held.
        case offsetMismatch(held: Int)
        /// Another request is still appending.
        case busy(held: Int)
    }

    enum AppendOutcome: Equatable {
        case appended(held: Int)
        /// The request was detached by an offset retrieval or cancellation; nothing was added.
        case detached
        /// The upload was ended meanwhile; nothing was added.
        case ended
    }

    /// A completed upload.
    struct Completion: Equatable {
        var byteCount: Int
        var sha256: String?
        /// `upload-TOKEN.body`, or the stream file for a stream-bound upload.
        var storedFile: String?
        /// The stream file's length, for a stream-bound upload.
        var streamOffset: Int?
    }

    /// Where the bytes go.
    enum Destination {
        case file(BodyFile)
        case stream(StreamAppender)
        case none
    }

    private struct State: ~Copyable {
        var held = 0
        var attachment: Attachment?
        /// The last request detached by someone else, and why.
        var cut: (request: Int, reason: String)?
        var hasher: SHA256?
        var destination: Destination
        var isEnded = false
        /// When a request last attached or detached.
        var lastActivity: ContinuousClock.Instant
    }

    let token: String
    /// Where the bytes go while the upload is open: its `.partial` file or its stream's file.
    let file: String?
    private let state: Mutex<State>

    init(token: String, destination: consuming sending Destination, hash: Bool) {
        self.token = token
        file =
            switch destination {
            case .file(let file): file.partialPath
            case .stream(let stream): stream.path
            case .none: nil
            }
        state = Mutex(State(hasher: hash ? SHA256() : nil, destination: destination, lastActivity: .now))
    }

    deinit {
        state.withLock { ResumableUpload.close(&$0, removingFile: false) }
    }

    /// Attaches `attachment` when the upload is free and `offset` is the bytes held, opening
    /// the upload's file for it.
    /// - Throws: when the file cannot be opened (or was changed on disk); nothing is attached.
    func attach(_ attachment: Attachment, at offset: Int) throws(SinkError) -> AttachOutcome {
        try state.withLock { (state: inout State) throws(SinkError) -> AttachOutcome in
            if state.isEnded { return .ended }
            if state.attachment != nil { return .busy(held: state.held) }
            if offset != state.held { return .offsetMismatch(held: state.held) }
            switch state.destination {
            case .file(let file) where !file.isOpen: try file.reopen(expectedLength: state.held)
            case .stream(let stream) where !stream.isOpen: try stream.reopen()
            case .file, .stream, .none: break
            }
            state.attachment = attachment
            state.lastActivity = .now
            return .attached
        }
    }

    /// Writes `bytes` after the bytes held, if `attachment` is still the attached request.
    /// A storage failure ends the upload (its file keeps what was written).
    func append(_ bytes: UnsafeRawBufferPointer, by attachment: Attachment) throws(SinkError) -> AppendOutcome {
        try state.withLock { (state: inout State) throws(SinkError) -> AppendOutcome in
            if state.isEnded { return .ended }
            guard state.attachment == attachment else { return .detached }
            do throws(SinkError) {
                switch state.destination {
                case .file(let file): try file.write(bytes)
                case .stream(let stream): try stream.append(bytes, uploadOffset: state.held)
                case .none: break
                }
            } catch {
                state.attachment = nil
                ResumableUpload.close(&state, removingFile: false)
                throw error
            }
            state.hasher?.update(bytes)
            state.held += bytes.count
            return .appended(held: state.held)
        }
    }

    /// Detaches `attachment` if it is still attached; returns the bytes held, `nil` once ended.
    @discardableResult
    func release(_ attachment: Attachment) -> Int? {
        state.withLock { state in
            if state.attachment == attachment {
                ResumableUpload.detach(&state)
            }
            return state.isEnded ? nil : state.held
        }
    }

    /// Why `attachment` was detached by someone else (not by its own request), or `nil`.
    func cutReason(_ attachment: Attachment) -> String? {
        state.withLock { state in
            state.cut.flatMap { $0.request == attachment.request ? $0.reason : nil }
        }
    }

    /// Ends the upload as complete if `attachment` is still attached: closes and renames its file.
    /// Returns `nil` (and changes nothing) when the request was detached or the upload ended.
    func complete(by attachment: Attachment) throws(SinkError) -> Completion? {
        try state.withLock { (state: inout State) throws(SinkError) -> Completion? in
            guard !state.isEnded, state.attachment == attachment else { return nil }
            state.attachment = nil
            state.isEnded = true
            var completion = Completion(
                byteCount: state.held, sha256: state.hasher.take().map { SHA256.hex($0.finalize()) })
            switch state.destination {
            case .file(let file):
                state.destination = .none
                completion.storedFile = try file.complete()
            case .stream(let stream):
                state.destination = .none
                completion.storedFile = stream.path
                completion.streamOffset = try? stream.length()
                stream.close()
            case .none:
                break
            }
            return completion
        }
    }

    /// Offset retrieval: detaches (and shuts down) any request still attached, so the next
    /// append at the returned offset is accepted. Returns the bytes held, `nil` once ended.
    func takeOver() -> Int? {
        state.withLock { state in
            guard !state.isEnded else { return nil }
            ResumableUpload.detachOther(&state, reason: "upload taken over by another request")
            return state.held
        }
    }

    /// Ends the upload without completing it: shuts down the attached request's connection,
    /// unless it is `sparing`, and keeps or removes its file. False when it had already ended.
    @discardableResult
    func end(removingFile: Bool, sparing: Attachment? = nil) -> Bool {
        state.withLock { state in
            guard !state.isEnded else { return false }
            if state.attachment != sparing {
                ResumableUpload.detachOther(&state, reason: "upload cancelled or forgotten meanwhile")
            }
            state.attachment = nil
            ResumableUpload.close(&state, removingFile: removingFile)
            return true
        }
    }

    /// Ends the upload if no request has been attached since `now - expiry`: removes its file
    /// when it holds no byte, else keeps it as `.partial`. True when it ended here.
    func expireIfIdle(at now: ContinuousClock.Instant, after expiry: Duration) -> Bool {
        state.withLock { state in
            guard !state.isEnded, state.attachment == nil, now - state.lastActivity >= expiry else { return false }
            ResumableUpload.close(&state, removingFile: state.held == 0)
            return true
        }
    }

    /// Detaches the attached request (someone else's) and shuts its connection down.
    private static func detachOther(_ state: inout State, reason: String) {
        guard let attached = state.attachment else { return }
        detach(&state)
        state.cut = (attached.request, reason)
        Socket.shutdown(descriptor: attached.descriptor, CInt(SHUT_RDWR))
    }

    /// No request is attached any more: close the file until the next one attaches.
    private static func detach(_ state: inout State) {
        state.attachment = nil
        state.lastActivity = .now
        switch state.destination {
        case .file(let file): _ = file.abandon()
        case .stream(let stream): stream.close()
        case .none: break
        }
    }

    /// Marks the upload ended and closes its destination (the file keeps `.partial`, or is removed).
    private static func close(_ state: inout State, removingFile: Bool) {
        state.isEnded = true
        switch state.destination {
        case .file(let file):
            let path = file.abandon()
            if removingFile {
                _ = unlink(path)
            }
        case .stream(let stream):
            stream.close()
        case .none:
            break
        }
        state.destination = .none
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
