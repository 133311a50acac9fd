/// What a receiver's answer says about single records of one request: which it refused for
/// good, and where it stopped processing. Made by an ``AnswerReader`` from the answer and the
/// records the request carried; the uploader turns it into dead letters, a report and the
/// next request.
///
/// Records are numbered from 0 in the order the request carried them (the order of the lines
/// in the stream).
///
/// Thread safety: a value type.
package struct PartialFailure: Sendable, Equatable {
    /// One refused record: its number within the request and the receiver's reason.
    ///
    /// Thread safety: a value type.
    package struct Rejection: Sendable, Equatable {
        package var index: Int
        package var reason: String
        package init(index: Int, reason: String) {
            self.index = index
            self.reason = reason
        }
    }

    /// The records the receiver refused for good; they are never sent again.
    package var rejected: [Rejection]
    /// How many records the receiver refused without saying which (OTLP's
    /// `rejectedLogRecords`, a Loki answer that names fewer entries than it ignored): the
    /// whole request is then kept as a dead letter, and ``summary`` says why.
    package var unidentified: Int
    /// The first record the receiver did not process: it and all after it are sent again
    /// (Splunk indexes the events before the invalid one and none after it). nil: every
    /// record was processed.
    package var unprocessedFrom: Int?
    /// Whether the unprocessed records wait for a backoff first (the receiver was overloaded,
    /// as with Elasticsearch items answered 429).
    package var backoff: Bool
    /// One line for a person: what the receiver said.
    package var summary: String

    package init(rejected: [Rejection] = [], unidentified: Int = 0, unprocessedFrom: Int? = nil, backoff: Bool = false, summary: String) {
        self.rejected = rejected
        self.unidentified = unidentified
        self.unprocessedFrom = unprocessedFrom
        self.backoff = backoff
        self.summary = summary
    }

    /// How many records the receiver refused.
    package var rejectedCount: Int { rejected.count + unidentified }
}
