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
}

extension [SinkHeaderField] {
    /// The values of every field called `name` (compared case-insensitively), in order.
    public func values(named name: String) -> [String] {
        let wanted = name.lowercased()
        return filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The first value of a field called `name` (case-insensitive), if any.
    public func first(named name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.lowercased() == wanted }?.value
    }
}
