/// Joins lines into multiline records (``MultilineRule``): fed lines in order, each with the
/// source range it came from and the time it was read, it holds the record being built and
/// hands it out once it is complete:
///
/// - at the next line that starts a record (it goes out, the new line is held);
/// - when ``deadline`` passes without a continuation (``expire(at:)``: the caller checks
///   the deadline, so a quiet source still sends its last record);
/// - when the next line would make it longer than `maxLines` lines or `maxBytes` bytes (the
///   line starts a new record);
/// - at ``flush()`` (the input ended, or its file is finished).
///
/// A record is its lines joined by `\n` (without the last line's `\n`) and the source range
/// from its first line's start to its last line's end: a caller marks the record's bytes with
/// that range, so a saved position never lands inside a record whose end is not acknowledged.
///
/// Pure: no I/O, no clock. Times are durations on one monotonic clock from any fixed origin
/// (`ContinuousClock`, or a test's `ManualClock`).
///
/// Thread safety: a value type, confined to the thread of the producer that feeds it.
struct MultilineJoiner {
    /// A whole record and the source range of its lines.
    ///
    /// Thread safety: a value type.
    struct Joined: Equatable {
        /// The lines joined by `\n`, without a last `\n`.
        var bytes: [UInt8]
        var start: Int64
        var end: Int64
        var lines: Int
        /// What the container runtime said of its first line (`--parse`); empty otherwise.
        var meta = RecordMeta()
    }

    let rule: MultilineRule
    /// The most bytes of one record's lines (with the `\n`s between them).
    let maxBytes: Int
    private var matcher: MultilineMatcher
    private var held: Joined?
    private var lastLineAt: Duration = .zero

    init(_ rule: MultilineRule, maxBytes: Int) {
        self.rule = rule
        self.maxBytes = max(1, maxBytes)
        matcher = MultilineMatcher(rule.kind)
    }

    /// Whether part of a record is held.
    var isHolding: Bool { held != nil }

    /// When the held record goes out without a continuation; nil when nothing is held.
    var deadline: Duration? { held == nil ? nil : lastLineAt + rule.timeout }

    /// Adds `line` (without its `\n`), source bytes `start..<end`, read at `now`; returns the
    /// record it completed, if any. A line of another stream (`meta`) than the held record's
    /// starts a record.
    mutating func add(_ line: UnsafeRawBufferPointer, start: Int64, end: Int64, at now: Duration, meta: RecordMeta = RecordMeta()) -> Joined? {
        let continues = matcher.continues(line)
        var done: Joined?
        if var record = held {
            if continues && record.meta.stream == meta.stream && record.lines < rule.maxLines && record.bytes.count + 1 + line.count <= maxBytes {
                record.bytes.append(0x0A)
                record.bytes.append(contentsOf: line)
                record.end = end
                record.lines += 1
                held = record
                lastLineAt = now
                return nil
            }
            done = record
        }
        held = Joined(bytes: Array(line), start: start, end: end, lines: 1, meta: meta)
        lastLineAt = now
        return done
    }

    /// The held record, if its deadline has come at `now`.
    mutating func expire(at now: Duration) -> Joined? {
        guard let deadline, now >= deadline else { return nil }
        return flush()
    }

    /// The held record, whatever its deadline.
    mutating func flush() -> Joined? {
        defer { held = nil }
        return held
    }
}

/// What a container runtime wrote beside a message (`ContainerLogLine`): its stream and time.
///
/// Thread safety: a value type.
struct RecordMeta: Equatable {
    /// `stdout` or `stderr`; nil for a plain line.
    var stream: String?
    /// The runtime's time of the line, in nanoseconds since 1970; nil: the time it was read.
    var nanoseconds: Int64?
}
