import Foundation

/// What the delivery loop tells the endpoint set after each plain request, and the lines a
/// person reads when an endpoint is set aside or back.
extension EndpointSet {
    typealias Machine = DeliveryMachine<Instant>

    /// Tells the set what came of a request to endpoint `index` (`retryable`: a failure the
    /// retry policy retries; `carried`: the receiver's offsets a 2xx acknowledged), with a line
    /// when it is set aside or back; returns whether the segment goes to another endpoint at once.
    mutating func report(
        _ result: Machine.Result, of index: Int, retryable: Bool, carried: Range<Int>, answer: UploadResponse?, now: Instant,
        onEvent: (UploadEvent) -> Void
    ) -> Bool {
        let url = url(index).absoluteString
        guard retryable else {
            if succeeded(index, carried: carried, now: now), count > 1 {
                onEvent(.notice("\(url) answers again: back in use"))
            }
            return false
        }
        let (aside, first) = failed(index, retryAfter: answer?.value(forHeader: "Retry-After"), now: now)
        let elsewhere = hasUsable(besides: index, now: now)
        if first, count > 1, let problem = Machine.problem(of: result) {
            let meanwhile = elsewhere ? "the others take its segments meanwhile" : "no other endpoint is in use"
            onEvent(.notice(problem.reason + String(format: "; %@ is set aside for %.1f s (%@), then tried again", url, aside.seconds, meanwhile)))
        }
        return elsewhere
    }
}
