import StreamUpHTTP

/// Resumable delivery: the stream is one upload of the IETF resumable-upload protocol (interop
/// version 6), created once and appended to with one PATCH per segment from the acknowledged
/// offset. After any failure a HEAD asks how much the server holds, and the next PATCH starts
/// exactly there: nothing lost, nothing sent twice.
///
/// - Create: the configured method (POST) with `Upload-Complete: ?0` and an empty body; its
///   `Location` is the upload (a creation also carries `Streamup-Stream-Id`/`Streamup-Offset`,
///   so a receiver can join an upload made after the first was lost to the stream).
/// - Append: PATCH with `Upload-Offset`; the answer's `Upload-Offset` is checked.
/// - Failure (transport, timeout, 5xx, 409): HEAD before the next PATCH; 404 or 410 means the
///   upload is gone, and a new one starts at the acknowledged offset.
/// - End: once every byte is acknowledged, an empty PATCH with `Upload-Complete: ?1`. If its
///   answer is lost and the server then forgets the upload or calls it complete, the upload
///   is done (every byte had been acknowledged): no empty duplicate is created.
extension DeliveryMachine {
    /// The resumable upload in use and what is known about it, one phase at a time.
    ///
    /// Thread safety: a value type, part of the machine.
    struct ResumableState {
        enum Phase {
            /// No upload (none yet, or the last one is gone): the next step creates one.
            case none
            /// The server told where it stands in `upload`: append from the acknowledged offset
            /// (or complete it once every byte is acknowledged).
            case open(Upload)
            /// A failure happened since the server last told its offset: HEAD before anything
            /// else. `afterCompletion`: the completing PATCH had gone out, so an upload now gone
            /// or complete was completed (only its answer was lost).
            case checking(Upload, afterCompletion: Bool)
            /// The completing PATCH is out, every byte acknowledged.
            case completing(Upload)
            /// The upload is complete: nothing more to send.
            case finished
        }

        private(set) var phase: Phase
        /// An exchange is out: the next waits for its answer.
        var exchangeOut = false

        init(upload: Upload?) {
            phase = upload.map { .checking($0, afterCompletion: false) } ?? .none
        }

        /// The upload in use, if any.
        var upload: Upload? {
            switch phase {
            case .open(let upload), .checking(let upload, _), .completing(let upload): upload
            case .none, .finished: nil
            }
        }

        /// The server made `upload` (or told where it stands in it).
        mutating func remember(_ upload: Upload) {
            phase = .open(upload)
        }

        /// The upload is gone: the next step creates another.
        mutating func forget() {
            phase = .none
        }

        /// A step failed: ask the server where it stands before the next.
        mutating func mustCheck() {
            switch phase {
            case .open(let upload): phase = .checking(upload, afterCompletion: false)
            case .completing(let upload): phase = .checking(upload, afterCompletion: true)
            case .checking, .none, .finished: break
            }
        }

        mutating func complete(_ upload: Upload) {
            phase = .completing(upload)
        }

        mutating func finish() {
            phase = .finished
        }
    }

    mutating func nextResumable(_ input: Input) -> Action {
        let upload: Upload
        switch resumable.phase {
        case .finished: return .finish
        case .none: return .send(.create(at: acknowledged))
        case .checking(let checked, _): return .send(.checkOffset(checked))
        case .open(let open), .completing(let open): upload = open
        }
        if input.inputEnded && acknowledged >= input.end {
            resumable.complete(upload)
            return .send(.complete(upload, at: input.end))
        }
        if !input.readable { return .waitForInput(from: acknowledged) }
        return .send(.append(upload, from: acknowledged, limits: limits))
    }

    mutating func handleResumable(_ result: Result, of exchange: Exchange, now: Instant) -> [Effect] {
        switch (exchange, result) {
        case (.create(let base), .answered(let answer, let carried)):
            guard answer.isSuccess else { return failed(.answer(answer), exchange: exchange, carried: carried, now: now) }
            guard let location = answer.location else {
                stop(
                    .protocolViolation(
                        "the server answered \(answer.status) without an upload Location: it does not speak resumable uploads (\(ResumableUploadFields.version) \(ResumableUploadFields.interopVersion))"
                    ))
                return []
            }
            let upload = Upload(url: location, base: base, target: nil)
            resumable.remember(upload)
            return [.saveUpload(upload)]

        case (.checkOffset(let upload), .answered(let answer, let carried)):
            return checkedOffset(of: upload, answer, carried: carried, now: now)

        case (.append(let upload, let from, _), .answered(let answer, let carried)):
            noteSent(carried)
            if answer.isSuccess {
                let expected = carried.upperBound - upload.base
                let held = answer.uploadOffset ?? expected
                guard held >= from - upload.base, held <= expected else {
                    stop(
                        .protocolViolation("PATCH \(upload.url) answered Upload-Offset \(held), outside the \(from - upload.base)...\(expected) it could hold"))
                    return []
                }
                return succeeded(acknowledging: upload.base + held, now: now)
            }
            return failedExchange(answer, exchange: exchange, carried: carried, now: now)

        case (.complete, .answered(let answer, let carried)):
            if answer.isSuccess {
                resumable.finish()
                return [.saveUpload(nil)]
            }
            return failedExchange(answer, exchange: exchange, carried: carried, now: now)

        case (.append, .failed(let failure, let carried)):
            noteSent(carried)
            resumable.mustCheck()
            return failed(.failure(failure), exchange: exchange, carried: carried, now: now)

        case (.complete, .failed(let failure, let carried)):
            resumable.mustCheck()
            return failed(.failure(failure), exchange: exchange, carried: carried, now: now)

        case (.create, .failed(let failure, let carried)), (.checkOffset, .failed(let failure, let carried)):
            return failed(.failure(failure), exchange: exchange, carried: carried, now: now)

        case (.segment, _):
            preconditionFailure("a plain segment in resumable delivery")
        }
    }

    /// The answer to a HEAD: where the server is in `upload`, or that the upload is gone (or,
    /// after the completion went out, that it is done).
    private mutating func checkedOffset(of upload: Upload, _ answer: Answer, carried: Range<Int>, now: Instant) -> [Effect] {
        let gone = answer.status == 404 || answer.status == 410
        let afterCompletion = if case .checking(_, afterCompletion: true) = resumable.phase { true } else { false }
        if afterCompletion && (gone || (answer.isSuccess && answer.uploadComplete == true)) {
            // The completion reached the server (it forgets or marks a completed upload);
            // only its answer was lost. A new upload would be an empty duplicate.
            resumable.finish()
            return [.saveUpload(nil), .notice(.completionAnswerLost)]
        }
        if gone {
            resumable.forget()
            return [.saveUpload(nil)]
        }
        guard answer.isSuccess else { return failed(.answer(answer), exchange: .checkOffset(upload), carried: carried, now: now) }
        guard let held = answer.uploadOffset else {
            stop(.protocolViolation("HEAD \(upload.url) answered \(answer.status) without a valid Upload-Offset"))
            return []
        }
        let position = upload.base + held
        guard position >= acknowledged else {
            stop(
                .protocolViolation(
                    "the server now holds \(counted(held, "byte")) of upload \(upload.url) but had acknowledged \(acknowledged - upload.base)"))
            return []
        }
        guard position <= highestSent else {
            stop(.protocolViolation("the server claims \(counted(held, "byte")) of upload \(upload.url), more than was sent"))
            return []
        }
        resumable.remember(upload)
        return position > acknowledged ? succeeded(acknowledging: position, now: now) : []
    }

    /// A non-2xx answer to a PATCH: a lost upload (404, 410) is re-created at the next step, an
    /// offset conflict (409) asks HEAD where to go on; anything else asks HEAD too and follows
    /// the retry policy.
    private mutating func failedExchange(_ answer: Answer, exchange: Exchange, carried: Range<Int>, now: Instant) -> [Effect] {
        switch answer.status {
        case 404, 410:
            resumable.forget()
            return [.saveUpload(nil)] + failed(.answer(answer), exchange: exchange, carried: carried, now: now, alwaysRetry: true)
        case 409:
            resumable.mustCheck()
            return failed(.answer(answer), exchange: exchange, carried: carried, now: now, alwaysRetry: true)
        default:
            resumable.mustCheck()
            return failed(.answer(answer), exchange: exchange, carried: carried, now: now)
        }
    }
}
