import StreamUpHTTP

/// One header (or trailer) field as it arrived: the name keeps its case, the value has its
/// surrounding whitespace removed.
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
public struct SinkHeaderField: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }

    /// The field as the parser found it.
    init(_ field: HTTPField) {
        self.init(name: field.name, value: field.value)
    }
}

extension [SinkHeaderField] {
    /// The values of every field called `name` (compared case-insensitively), in order.
    public func values(named name: String) -> [String] {
        map { HTTPField(name: $0.name, value: $0.value) }.values(named: name)
    }

    /// The first value of a field called `name` (case-insensitive), if any.
    public func first(named name: String) -> String? {
        map { HTTPField(name: $0.name, value: $0.value) }.first(named: name)
    }
}
