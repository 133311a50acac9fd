/// Partial failures: an answer that says the receiver refused some of a request's records and
/// stored the others (Elasticsearch `errors:true` items, Splunk's `invalid-event-number`, OTLP
/// `partial_success`, Loki's list of rejected entries), read by the uploader's ``AnswerReader``
/// and handed to the machine in stream offsets.
///
/// What the machine does with one, whatever the status it came with (Splunk and Loki answer
/// 400, the others 2xx):
/// - the refused records are reported (and kept as dead letters) first, while the buffer still
///   holds them; they are never sent again;
/// - the segment is stored up to where the receiver stopped processing (all of the request,
///   or up to `unprocessedFrom`: Splunk indexes the events before the bad one and none after
///   it), and the records after that go out in the next request (acknowledged in stream order
///   with the rest of the window);
/// - when the receiver was overloaded (`backoff`: Elasticsearch items answered 429), or when
///   nothing was processed at all, the rest waits for a backoff and counts as a failed attempt
///   (so `--retries` bounds it); otherwise the next request goes at once.
extension DeliveryMachine {
    /// The records a receiver refused, in stream offsets.
    struct Partial: Equatable {
        /// The refused records (for the report and the dead letters).
        var rejection: RecordRejection?
        /// Records from this offset on were not processed (nil: the whole request was).
        var unprocessedFrom: Int? = nil
        /// Wait a backoff before sending the unprocessed records (the receiver was overloaded).
        var backoff = false
        /// A receiver's warning that refused nothing (OTLP `partial_success` with 0 rejected).
        var warning: String? = nil
    }

    /// Records a receiver refused for good.
    struct RecordRejection: Equatable {
        /// One refused record: its bytes in the stream and the receiver's reason.
        struct Record: Equatable {
            var range: Range<Int>
            var reason: String
        }
        /// The refused records; when `whole`, the one range of the whole request (the answer
        /// did not say which records it refused).
        var records: [Record]
        /// How many records the receiver refused.
        var count: Int
        /// The answer named no records: the whole request is kept, and `summary` says why.
        var whole: Bool
        /// One line: what the receiver said.
        var summary: String
    }

    /// A segment's answer that carries a partial failure.
    mutating func handlePartial(_ partial: Partial, answer: Answer, limits: SegmentLimits, carried: Range<Int>, now: Instant) -> [Effect] {
        var effects: [Effect] = []
        if let rejection = partial.rejection { effects.append(.rejectRecords(rejection)) }
        if let warning = partial.warning { effects.append(.notice(.receiverWarning(warning))) }
        let from = carried.lowerBound
        let processed = min(max(partial.unprocessedFrom ?? carried.upperBound, from), carried.upperBound)
        guard processed < carried.upperBound else { return effects + (processed > from ? stored(from: from, now: now) : []) }
        if processed > from {
            effects += storedPart(from: from, upTo: processed, now: now)
        }
        if partial.backoff || processed <= from {
            // The rest is retried like an overloaded answer; a give-up sets it aside (dead
            // letters) or stops on it.
            let rest = Answer(status: 429, retryAfter: answer.retryAfter)
            effects += failed(
                .answer(rest), exchange: .segment(from: processed, limits: limits), carried: processed..<carried.upperBound, now: now, alwaysRetry: true)
        }
        return effects
    }
}
