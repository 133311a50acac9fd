import StreamUpHTTP

/// What a person reads of the machine's notices: each ``DeliveryMachine/Notice`` in the words
/// of one event, here and nowhere else.
extension DeliveryMachine.Notice {
    /// The event that says this notice. `held`: the bytes held for a resend now (read only
    /// when the words need them); `inSpool`: they are held in a spool (else in memory);
    /// `duplicatesPossible`: plain requests, whose resends a receiver may store twice.
    func event(held: () -> Int, inSpool: Bool, duplicatesPossible: Bool) -> UploadEvent {
        switch self {
        case .retrying(let reason, let attempt, let delay, let first):
            return .retrying(reason: reason, attempt: attempt, delay: delay, first: first)
        case .stillFailing(let reason, let failedAttempts, let failingFor):
            let place = inSpool ? "in the spool" : "in memory"
            return .notice(
                "delivery has been failing for \(StreamUploader.spoken(failingFor)) (\(counted(failedAttempts, "failed attempt")), the last: \(reason)); "
                    + "\(counted(held(), "byte")) held \(place), still retrying")
        case .recovered(let failedAttempts, let resentBytes, let after):
            return .recovered(failedAttempts: failedAttempts, resentBytes: resentBytes, after: after, duplicatesPossible: duplicatesPossible)
        case .segmentShrunk(let bytes, let reason):
            return .notice("\(reason): requests of whole records up to \(counted(bytes, "byte")) from now on (a longer record goes alone)")
        case .completionAnswerLost:
            return .notice("the answer to the completing request was lost; the server had acknowledged every byte and has completed the upload")
        case .receiverWarning(let text):
            return .notice(text)
        case .stopping(let reason):
            return .notice(reason + "; stopping (--dead-letter DIR sets such a record aside and goes on)")
        }
    }
}

extension StreamUploader {
    /// A duration as a person says it, to the second from a second on: `250 ms`, `45 s`,
    /// `2 min 5 s`, `3 h 10 min`. Every line that says how long something lasted uses it.
    package static func spoken(_ duration: Duration) -> String {
        if duration < .seconds(1) { return "\(max(0, Int((duration.seconds * 1000).rounded()))) ms" }
        let seconds = Int(duration.seconds.rounded())
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }
}
