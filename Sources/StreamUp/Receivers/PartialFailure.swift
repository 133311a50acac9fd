/// What a receiver's answer says about single records of one request: which it refused for
/// good, and where it stopped processing. Made by an ``AnswerReader`` from the answer and the
/// records the request carried; the uploader turns it into dead letters, a report and the
/// next request.
///
/// Records are numbered from 0 in the order the request carried them (the order of the lines
/// in the stream).
///
/// Thread safety: a value type.
public struct PartialFailure: Sendable, Equatable {
    /// One refused record: its number within the request and the receiver's reason.
    ///
    /// Thread safety: a value type.
    public struct Rejection: Sendable, Equatable {
        public var index: Int
        public var reason: String
        public init(index: Int, reason: String) {
            self.index = index
            self.reason = reason
        }
    }

    /// The records the receiver refused for good; they are never sent again.
    public var rejected: [Rejection]
    /// How many records the receiver refused without saying which (OTLP's
    /// `rejectedLogRecords`, a Loki answer that names fewer entries than it ignored): the
    /// whole request is then kept as a dead letter, and ``summary`` says why.
    public var unidentified: Int
    /// The first record the receiver did not process: it and all after it are sent again
    /// (Splunk indexes the events before the invalid one and none after it). nil: every
    /// record was processed.
    public var unprocessedFrom: Int?
    /// Whether the unprocessed records wait for a backoff first (the receiver was overloaded,
    /// as with Elasticsearch items answered 429).
    public var backoff: Bool
    /// One line for a person: what the receiver said.
    public var summary: String

    public init(rejected: [Rejection] = [], unidentified: Int = 0, unprocessedFrom: Int? = nil, backoff: Bool = false, summary: String) {
        self.rejected = rejected
        self.unidentified = unidentified
        self.unprocessedFrom = unprocessedFrom
        self.backoff = backoff
        self.summary = summary
    }

    /// How many records the receiver refused.
    public var rejectedCount: Int { rejected.count + unidentified }
}
