extension StreamUploader {
    /// Counters of a reliable upload.
    public struct Progress: Sendable, Equatable {
        /// Bytes the producer wrote in this run.
        public var produced: Int
        /// Stream offset up to which the server acknowledged the bytes (one request: the
        /// connection took them).
        public var acknowledged: Int
        /// Bytes held for a possible resend (in memory or in the spool).
        public var held: Int
        /// Bytes sent more than once.
        public var resent: Int
        /// Failed requests that were retried.
        public var retries: Int
        /// How often the producer was paused because the buffer was full.
        public var pauses: Int
        /// How long the producer spent paused.
        public var pausedTime: Duration
        /// Segments set aside in the dead-letter directory, and their bytes.
        public var deadLetters: Int
        public var deadLetterBytes: Int
        /// Records longer than `maxRecordBytes` that were split.
        public var splitRecords: Int
        /// Records the receiver refused while it stored the others (`Options.answerReader`, set
        /// by ``Receiver/deliveryOptions(_:)``).
        public var rejectedRecords: Int
    }

    /// The counters now: the buffer's, the delivery machine's and the dead letters'.
    public var progress: Progress {
        let pauses = buffer.pauses
        let produced = writer.bytesWritten
        let (acknowledged, held) = buffer.withState { ($0.acknowledged, $0.written - $0.acknowledged) }
        let splits = buffer.splitRecords
        let (resent, retries) = machine.withLock { ($0.resentBytes, $0.retries) }
        return state.withLock { state in
            Progress(
                produced: produced, acknowledged: acknowledged, held: held, resent: resent, retries: retries,
                pauses: pauses.count, pausedTime: pauses.time, deadLetters: state.deadLetters,
                deadLetterBytes: state.deadLetterBytes, splitRecords: splits, rejectedRecords: state.rejectedRecords)
        }
    }
}
