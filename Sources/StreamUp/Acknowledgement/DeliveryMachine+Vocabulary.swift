/// What the delivery machine speaks: the exchanges it asks for, what it reads of the buffer,
/// of an answer and of a failure, and the actions, effects and notices it returns.
extension DeliveryMachine {
    /// Where a resumable upload lives and the stream offset of its byte 0.
    typealias Upload = ResumableUploadReference

    /// One exchange with the server.
    enum Exchange: Equatable {
        /// Plain: a request whose body is the stream from `from`, cut by `limits`.
        case segment(from: Int, limits: SegmentLimits)
        /// Resumable: create an upload whose byte 0 is stream offset `at`.
        case create(at: Int)
        /// Resumable: ask how many bytes of `upload` the server holds (HEAD).
        case checkOffset(Upload)
        /// Resumable: append the stream from `from` to `upload` (PATCH).
        case append(Upload, from: Int, limits: SegmentLimits)
        /// Resumable: complete `upload`, which holds the stream up to `at` (empty PATCH).
        case complete(Upload, at: Int)
    }

    /// What the buffer holds, as the machine needs it.
    struct Input: Equatable {
        /// Everything below this offset is acknowledged.
        var acknowledged: Int
        /// A whole record (or the end of the input) is there to send from `acknowledged`.
        var readable: Bool
        /// The input has ended at `end`.
        var inputEnded: Bool
        var end: Int
        /// The end of the last whole record written (nil: unknown, so no segment is cut past
        /// the acknowledged offset).
        var boundary: Int? = nil

        /// Whether a segment cut from `offset` (at or past the acknowledged one) would carry a record.
        func isReadable(from offset: Int) -> Bool {
            if offset == acknowledged { return readable }
            return (boundary ?? acknowledged) > offset || (inputEnded && offset < end)
        }
    }

    /// The parts of an answer the machine looks at.
    struct Answer: Equatable {
        var status: Int
        var retryAfter: String? = nil
        /// `Upload-Offset`, when valid.
        var uploadOffset: Int? = nil
        /// `Upload-Complete`, when it says.
        var uploadComplete: Bool? = nil
        /// `Location`, resolved against the request (resumable creation).
        var location: String? = nil
        /// Records the receiver refused while it stored the others (DeliveryMachine+Partial).
        var partial: Partial? = nil
        /// The first line of the body, for messages (bounded, control characters escaped).
        var firstLine: String? = nil
        /// The receiver's answer reader knows this refusal for one no retry fixes (a
        /// ClickHouse exception code for an unknown table or a parse error).
        var permanent = false
        /// The endpoint that answered, when there are several (it names it in messages).
        var endpoint: String? = nil
        /// How long the answer took after the request started (for the adaptive window).
        var took: Duration? = nil
        var isSuccess: Bool { (200..<300).contains(status) }
    }

    /// A request that got no answer.
    struct Failure: Equatable {
        /// `certificate` and `unsendable` (a body that cannot be sent as configured) are final.
        /// `earlyAnswer`: a 2xx came before the server had the whole body (it did not read the
        /// rest), retried a few times like a lost connection, without making segments smaller
        /// (a body small enough to sit in socket buffers hides such an answer), then final.
        enum Kind: Equatable { case transport, certificate, unsendable, cancelled, earlyAnswer }
        var kind: Kind
        var message: String
        /// The endpoint that did not answer, when there are several (it names it in messages).
        var endpoint: String? = nil
    }

    /// How an exchange ended, and which stream bytes its body carried.
    enum Result: Equatable {
        case answered(Answer, carried: Range<Int>)
        /// No answer came.
        case failed(Failure, carried: Range<Int>)
    }

    /// What the uploader should do next.
    enum Action: Equatable {
        /// Nothing to send: wait until a record (or the end) is there from this offset (or for
        /// an answer, when requests are out).
        case waitForInput(from: Int)
        /// Nothing more may go out now (the window is full, or the last segment's cut is not
        /// known yet): wait for a request that is out to end.
        case awaitAnswers
        case send(Exchange)
        /// Back off until this instant, then ask again.
        case sleep(until: Instant)
        /// Set the segment from `from` aside (its last attempt carried `carried`; if that is
        /// empty, the records `limits` would carry), then acknowledge past it and go on.
        case deadLetter(from: Int, carried: Range<Int>, limits: SegmentLimits, reason: String)
        /// Everything is delivered; the last 2xx answer is the upload's answer.
        case finish
        /// Give up: on the last answer (`answer` true) or with `reason` as the error.
        case stop(Stop)
    }

    /// Why the upload stopped.
    enum Stop: Equatable {
        /// A final answer (or the last one when retries ran out): it is the upload's answer.
        case answer(status: Int)
        /// No answer could be had: retries ran out on failures, or the request was cancelled.
        case failure(Failure)
        /// The server broke the resumable-upload protocol.
        case protocolViolation(String)
    }

    /// Side effects of a result, for the uploader to carry out in order.
    enum Effect: Equatable {
        /// The server holds the stream below this offset.
        case acknowledge(upTo: Int)
        /// Remember (nil: forget) the resumable upload, in the spool for the next run.
        case saveUpload(Upload?)
        /// The receiver refused these records for good: report them (and keep them as dead
        /// letters) before the acknowledgement that follows frees their bytes.
        case rejectRecords(RecordRejection)
        case notice(Notice)
    }

    /// Things a person should hear about (the CLI prints the first failure and the recovery
    /// always, each retry with `-v`).
    enum Notice: Equatable {
        case retrying(reason: String, attempt: Int, delay: Duration, first: Bool)
        /// A failing spell goes on: `failedAttempts` over `failingFor` so far (at most one a
        /// `reportEvery`).
        case stillFailing(reason: String, failedAttempts: Int, failingFor: Duration)
        /// Delivery works again; `resentBytes` were sent again after an attempt that may have
        /// stored them (no answer came, or a 5xx): a refusal (4xx, 429) stored nothing.
        case recovered(failedAttempts: Int, resentBytes: Int, after: Duration)
        case segmentShrunk(toBytes: Int, reason: String)
        case completionAnswerLost
        /// The upload stops on a refusal the answer alone does not explain (a record too
        /// large for any request).
        case stopping(reason: String)
        /// The receiver warned about records it stored anyway.
        case receiverWarning(String)
    }
}
