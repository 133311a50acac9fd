import Foundation
import StreamUp
import Testing

/// What an app's `onEvent` handler can rely on now that ``UploadEvent`` is a struct: a kind to
/// compare with, whether a person should see it without asking, the status of an answer, and one
/// line for a log.
@Suite struct UploadEventTests {
    /// Each event has its kind; only answers and refused redirects carry a status.
    @Test func eachEventHasItsKind() {
        let url = URL(string: "http://127.0.0.1:9/ingest")!
        let events: [(UploadEvent, UploadEvent.Kind, Int?)] = [
            (.requestStarted(method: "POST", url: url, headers: []), .requestStarted, nil),
            (.responseReceived(statusCode: 503, headers: [:]), .responseReceived, 503),
            (.redirectRefused(statusCode: 307, location: nil), .redirectRefused, 307),
            (.retrying(reason: "the server answered 503", attempt: 1, delay: .seconds(1), first: true), .retrying, nil),
            (.recovered(failedAttempts: 2, resentBytes: 10, after: .seconds(3), duplicatesPossible: true), .recovered, nil),
            (.deadLettered(bytes: 5, file: "/tmp/x", reason: "the server answered 400"), .deadLettered, nil),
            (.recordsRejected(count: 1, reason: "1 record refused", file: nil), .recordsRejected, nil),
            (.notice("a notice"), .notice, nil),
            (.source(.waitingForMatch(pattern: "/var/log/*.log")), .source, nil),
        ]
        for (event, kind, status) in events {
            #expect(event.kind == kind, "\(event)")
            #expect(event.statusCode == status, "\(event)")
        }
        #expect(Set(events.map(\.1.name)).count == events.count)
    }

    /// What a person sees without asking is what `streamup` prints without `-v`: the first
    /// failure of a spell (not each retry), recoveries, dead letters, notices and a file
    /// follower's warnings; not each request, answer or file followed.
    @Test func noticesAreWhatAPersonShouldSee() {
        let url = URL(string: "http://127.0.0.1:9/ingest")!
        #expect(UploadEvent.retrying(reason: "refused", attempt: 1, delay: .seconds(1), first: true).isNotice)
        #expect(!UploadEvent.retrying(reason: "refused", attempt: 2, delay: .seconds(2), first: false).isNotice)
        #expect(UploadEvent.recovered(failedAttempts: 2, resentBytes: 0, after: .seconds(3), duplicatesPossible: false).isNotice)
        #expect(UploadEvent.notice("the telemetry buffer was full").isNotice)
        #expect(UploadEvent.source(.waitingForMatch(pattern: "/var/log/*.log")).isNotice)
        #expect(!UploadEvent.source(.following(path: "/var/log/a.log", offset: 0)).isNotice)
        #expect(!UploadEvent.requestStarted(method: "POST", url: url, headers: []).isNotice)
        #expect(!UploadEvent.responseReceived(statusCode: 200, headers: [:]).isNotice)
    }

    /// The line for a log names what happened and its details.
    @Test func descriptionIsOneLineWithTheDetails() {
        let retrying = UploadEvent.retrying(reason: "the server answered 503", attempt: 3, delay: .seconds(2), first: false)
        #expect(retrying.description.hasPrefix("the server answered 503; trying again in "))
        #expect(retrying.description.hasSuffix("(failure 3 in a row)"))
        let recovered = UploadEvent.recovered(failedAttempts: 1, resentBytes: 1, after: .seconds(1), duplicatesPossible: false)
        #expect(recovered.description.hasPrefix("delivery recovered after 1 failed attempt over "))
        #expect(recovered.description.hasSuffix("; 1 byte sent again"))
        let atOnce = UploadEvent.recovered(failedAttempts: 1, resentBytes: 0, after: .microseconds(300), duplicatesPossible: false)
        #expect(atOnce.description == "delivery recovered after 1 failed attempt")
        // Said as the "failing for" lines say it, not as Duration prints itself.
        let outage = UploadEvent.recovered(failedAttempts: 9, resentBytes: 0, after: .milliseconds(124_953), duplicatesPossible: false)
        #expect(outage.description == "delivery recovered after 9 failed attempts over 2 min 5 s")
        #expect(UploadEvent.source(.truncated(path: "/var/log/a.log")).description == "/var/log/a.log was truncated: reading it again from its start")
        #expect(UploadEvent.recordsRejected(count: 2, reason: "2 records refused", file: "/dl/x").description == "2 records refused; kept in /dl/x")
        for event in [retrying, recovered] { #expect(!event.description.contains("\n")) }
    }
}
