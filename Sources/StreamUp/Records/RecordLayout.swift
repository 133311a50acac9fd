import StreamUpHTTP

/// One record's bytes as a template, made once per formatter: literal bytes, each followed by a
/// value written per line (the time or the escaped line), so a record costs a few copies.
///
/// ```
///   {"time":"  <time>  ","host":"h","message":"  <line>  "}\n
///   |-- literal --|slot|------- literal -------|slot|literal|end
/// ```
///
/// A shape that is a flat JSON object also keeps its members as ``Field``s, so that a line that
/// is itself a JSON object can get them merged in (``RecordFormat/json``).
///
/// Thread safety: a value type.
struct RecordLayout: Sendable {
    /// What follows a literal.
    enum Slot: Sendable, Equatable {
        case time(TimeStyle)
        /// The line's escaped bytes (its quotes are in the literals).
        case message
        case end
    }

    struct Part: Sendable {
        var literal: [UInt8]
        var slot: Slot
    }

    /// A member's value.
    enum Value: Sendable {
        /// Bytes of JSON written as they are (a string literal, an object).
        case json([UInt8])
        case time(TimeStyle)
        case message

        /// The most bytes it writes (a time at most 32 and its quotes; a message is never merged).
        var maximumCount: Int {
            switch self {
            case .json(let bytes): bytes.count
            case .time: 34
            case .message: 0
            }
        }
    }

    /// One member of a flat object: its key as UTF-8 (to compare with keys a line has) and
    /// `"key":` as written.
    struct Field: Sendable {
        var name: [UInt8]
        var keyPrefix: [UInt8]
        var value: Value
    }

    let parts: [Part]
    /// The members merged into a line that is a JSON object (the message left out); nil when the
    /// shape is not a flat object that can take the line's own.
    let mergeFields: [Field]?
    /// Lines that are empty or only ASCII white space make no record (Splunk refuses a blank
    /// event, and with it the events after it in the request).
    var skipsBlankLines = false

    /// A flat JSON object of `fields`, in order.
    static func object(_ fields: [Field], mergeable: Bool) -> RecordLayout {
        var builder = Builder()
        builder.literal("{")
        for (index, field) in fields.enumerated() {
            if index > 0 { builder.literal(",") }
            builder.bytes(field.keyPrefix)
            switch field.value {
            case .json(let bytes): builder.bytes(bytes)
            case .time(let style): builder.time(style)
            case .message: builder.message()
            }
        }
        builder.literal("}")
        return builder.layout(mergeFields: mergeable ? fields.filter { if case .message = $0.value { false } else { true } } : nil)
    }

    /// The members of a flat object: the shape's own (`builtIn`, the message last), then the
    /// `extra` ones. An extra member whose key is a built-in one replaces its value in place; of
    /// two extra members with one key, the last wins; so no key is written twice.
    /// - Throws: `.invalidConfiguration` when two built-in members share a key, or an extra one
    ///   uses the message's key.
    static func flatFields(
        builtIn: [(label: String, name: String, value: Value)], extra: [(name: String, value: Value)]
    ) throws(StreamUpError) -> [Field] {
        for (index, field) in builtIn.enumerated() {
            if let other = builtIn[..<index].first(where: { Array($0.name.utf8) == Array(field.name.utf8) }) {
                throw StreamUpError(
                    .invalidConfiguration, "the \(other.label) and \(field.label) fields both use the key \"\(field.name)\"")
            }
        }
        guard let message = builtIn.last, case .message = message.value else {
            preconditionFailure("a flat record ends with its message")
        }
        var ordered = builtIn.dropLast().map { (name: Array($0.name.utf8), value: $0.value) }
        for field in extra {
            let name = Array(field.name.utf8)
            guard name != Array(message.name.utf8) else {
                throw StreamUpError(
                    .invalidConfiguration,
                    "the field \"\(field.name)\" uses the message key; pick another field name or message key")
            }
            if let index = ordered.firstIndex(where: { $0.name == name }) {
                ordered[index].value = field.value
            } else {
                ordered.append((name, field.value))
            }
        }
        ordered.append((Array(message.name.utf8), .message))
        return ordered.map { field in
            var keyPrefix: [UInt8] = []
            field.name.withUnsafeBytes { JSONString.append($0, to: &keyPrefix) }
            keyPrefix.append(UInt8(ascii: ":"))
            return Field(name: field.name, keyPrefix: keyPrefix, value: field.value)
        }
    }

    /// `"text"` as JSON.
    static func jsonString(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONString.append(text, to: &bytes)
        return bytes
    }

    /// A JSON object of string members in order; of two members with one key the last value
    /// wins, in the first one's place.
    static func jsonObject(_ members: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in uniqued(members).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += jsonString(member.name) + [UInt8(ascii: ":")] + jsonString(member.value)
        }
        return bytes + [UInt8(ascii: "}")]
    }

    /// `members` with each key once: the last value, in the first one's place.
    static func uniqued(_ members: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        for member in members {
            if let index = result.firstIndex(where: { $0.name == member.name }) {
                result[index].value = member.value
            } else {
                result.append(member)
            }
        }
        return result
    }

    /// Collects literal bytes and slots into parts.
    ///
    /// Thread safety: a value type, used while a layout is made.
    struct Builder {
        private var parts: [Part] = []
        private var pending: [UInt8] = []

        mutating func literal(_ text: String) { pending += Array(text.utf8) }
        mutating func bytes(_ bytes: [UInt8]) { pending += bytes }

        /// The time in `style`, quoted when the style is a string.
        mutating func time(_ style: TimeStyle) {
            if style.isQuoted { literal("\"") }
            parts.append(Part(literal: pending, slot: .time(style)))
            pending = style.isQuoted ? [UInt8(ascii: "\"")] : []
        }

        /// The line as a JSON string.
        mutating func message() {
            parts.append(Part(literal: pending + [UInt8(ascii: "\"")], slot: .message))
            pending = [UInt8(ascii: "\"")]
        }

        /// The layout: what was collected, then `\n`.
        func layout(mergeFields: [Field]?) -> RecordLayout {
            RecordLayout(parts: parts + [Part(literal: pending + [0x0A], slot: .end)], mergeFields: mergeFields)
        }
    }
}
