import Foundation
import StreamUpSystem
import Testing

@testable import StreamUp

/// `--drop`, `--keep` and `--redact` as pure code: what a record's message becomes, what is
/// refused when the rules are made, and that no record whose matching did not finish leaves
/// unfiltered.
@Suite struct RecordFilterTests {
    private static func apply(_ filter: RecordFilter, _ message: String) -> String? {
        switch Array(message.utf8).withUnsafeBytes({ filter.apply($0) }) {
        case .unchanged: message
        case .dropped: nil
        case .replaced(let bytes): String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func refusal(_ rules: [RecordFilter.Rule]) -> String? {
        do {
            _ = try RecordFilter(rules)
            return nil
        } catch {
            return error.context
        }
    }

    /// A pattern alone masks the whole match with `***`, `=` included (the natural spelling);
    /// a template given apart keeps a group; empty matches are left alone.
    @Test func aPatternAloneMasksWhatItMatchesAndATemplateGoesApart() throws {
        let natural = try RecordFilter([.redact("password=[^ ]*", template: nil)])
        #expect(Self.apply(natural, "login user=ann password=hunter2 from 10.0.0.1") == "login user=ann *** from 10.0.0.1")
        let templated = try RecordFilter([.redact("(password=)\\S+", template: "$1\\$***")])
        #expect(Self.apply(templated, "a password=hunter2 b password=x") == "a password=$*** b password=$***")
        let optional = try RecordFilter([.redact("k=(\\d)?x*", template: "[$1]")])
        #expect(Self.apply(optional, "k=x k=7") == "[] [7]")
        let empty = try RecordFilter([.redact("x*", template: nil)])
        #expect(Self.apply(empty, "abxxc") == "ab***c")
        #expect(Self.apply(natural, "nothing secret") == "nothing secret")
    }

    /// Rules that could only mislead are refused as they are made: an empty pattern, a template
    /// naming a group the pattern lacks, and the old `PATTERN=TEMPLATE` spelling (which would
    /// now match nothing and let the secret through), with the spelling meant.
    @Test func misleadingRulesAreRefusedWithTheSpellingMeant() {
        #expect(Self.refusal([.drop("")]) == "--drop: the pattern is empty (it would match every record); give the text to match")
        #expect(Self.refusal([.redact("", template: "x")]) == "--redact: the pattern is empty (it would match every record); give the text to match")
        #expect(
            Self.refusal([.redact("password=\\S+", template: "$1***")])
                == "--redact-with '$1***': '$1' names a group, and the pattern has none: put ( ) around the part to keep in 'password=\\S+'")
        #expect(
            Self.refusal([.redact("(a)(b)", template: "$3")])
                == "--redact-with '$3': '$3' names a group the pattern does not have (it has 2: $1 to $2) in '(a)(b)'")
        #expect(
            Self.refusal([.redact("(password=)\\S+=$1***", template: nil)])
                == "--redact '(password=)\\S+=$1***' is not a regular expression (ICU syntax); a template goes apart from the pattern: "
                + "--redact '(password=)\\S+' --redact-with '$1***'")
        #expect(
            Self.refusal([.redact("(token=)\\w+=$1", template: nil)])
                == "--redact '(token=)\\w+=$1': '$' followed by a digit can never match (a template's group?); a template goes apart from the pattern: "
                + "--redact '(token=)\\w+' --redact-with '$1'")
        #expect(Self.refusal([.redact("=x", template: nil), .redact("cost [$1]", template: nil), .keep("a$")]) == nil)
    }

    /// A pattern that backtracks without bound (`(a+)+$` before a character that is not `a`) on
    /// a short line: the record's rules stop at the time limit and its message goes as `***`,
    /// the secret the first alternative found included; counted, and said once.
    @Test func aRecordWhoseRulesRunOutOfTimeIsMaskedWhole() throws {
        let filter = try RecordFilter([.redact("SECRET\\d|(a+)+$", template: nil)], timeLimit: .milliseconds(100))
        let said = Mutex<[String]>([])
        filter.notices.setHandler { line in said.withLock { $0.append(line) } }
        let line = "token SECRET1 " + String(repeating: "a", count: 28) + "!"
        #expect(Self.apply(filter, line) == "***")
        #expect(filter.masked.value == 1 && filter.dropped.value == 0)
        let lines = said.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("--redact 'SECRET\\d|(a+)+$' took over 100ms of CPU on a record of 43 bytes: its message was sent as ***") == true)
        // Lines the pattern finishes on at once pass as before.
        #expect(Self.apply(filter, "token SECRET2 ok") == "token *** ok")
    }

    /// A drop or keep rule that runs out of time neither drops the record nor lets it through
    /// as it is: it is masked too.
    @Test func aDropOrKeepThatRunsOutOfTimeMasksTheRecord() throws {
        let line = "card 4111-1111-1111-1111 " + String(repeating: "a", count: 28) + "!"
        for rule in [RecordFilter.Rule.drop("(a+)+$"), .keep("(a+)+$")] {
            let filter = try RecordFilter([rule, .redact("\\d{4}(-\\d{4}){3}", template: nil)], timeLimit: .milliseconds(100))
            #expect(Self.apply(filter, line) == "***")
            #expect(filter.masked.value == 1 && filter.dropped.value == 0)
        }
    }

    /// When ICU abandons a match (its backtracking stack is full on a long line) it reports no
    /// more matches: the rest of the line was never searched. The record is masked, not sent
    /// with the secret after the point ICU gave up.
    @Test func aMatchICUAbandonsMasksTheRecord() throws {
        let filter = try RecordFilter([.redact("(a|b)*x|password=\\S+", template: nil)])
        let said = Mutex<[String]>([])
        filter.notices.setHandler { line in said.withLock { $0.append(line) } }
        let line = String(repeating: "ab", count: 200_000) + "x password=hunter2"
        // (A Bool, so that a failure does not print the 400 kB line.)
        let masked = Self.apply(filter, line) == "***"
        #expect(masked)
        #expect(filter.masked.value == 1)
        #expect(said.withLock { $0 }.first?.hasPrefix("ICU abandoned matching --redact '(a|b)*x|password=\\S+' on a record of 400018 bytes") == true)
    }

    /// The budget reads the meter at every 256th tick only, starts at the first reading, and
    /// gives up at the first reading past the limit.
    @Test func theBudgetReadsTheMeterEvery64TicksAndStopsPastTheLimit() {
        let readings = Mutex<[Duration]>([.seconds(5), .milliseconds(5_060), .milliseconds(5_101)])
        let reads = Mutex(0)
        let meter = MatchBudget.Meter {
            reads.withLock { $0 += 1 }
            return readings.withLock { $0.removeFirst() }
        }
        var budget = MatchBudget(limit: .milliseconds(100), meter: meter)
        var verdicts: [Bool] = []
        for _ in 1...769 { verdicts.append(budget.tick()) }
        // Read at ticks 256 (the start, 5 s), 512 (60 ms spent) and 768 (101 ms): it stops there.
        #expect(verdicts.firstIndex(of: true) == 767)
        #expect(verdicts[767...].allSatisfy { $0 })
        #expect(budget.gaveUp && budget.ranOutOfTime && reads.withLock { $0 } == 3)
    }

    /// The first masked record is said at once; more within a minute are counted and named in
    /// the next line, at least a minute later.
    @Test func maskedRecordsAreSaidAtMostOnceAMinute() {
        let notices = RecordFilter.Notices()
        let said = Mutex<[String]>([])
        notices.setHandler { line in said.withLock { $0.append(line) } }
        let start = ContinuousClock.now
        notices.post("first", now: start)
        notices.post("second", now: start + .seconds(10))
        notices.post("third", now: start + .seconds(59))
        notices.post("fourth", now: start + .seconds(61))
        #expect(said.withLock { $0 } == ["first", "fourth (and 2 more records masked since the last such line)"])
    }
}
