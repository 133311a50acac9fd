/// One header (or trailer) field as the parser found it: the name keeps its case, the value has
/// its surrounding spaces and tabs removed (RFC 9110 §5.5).
///
/// Thread safety: a value type that is never shared mutably; safe to send anywhere.
package struct HTTPField: Sendable, Hashable, CustomStringConvertible {
    package var name: String
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    package var description: String { "\(name): \(value)" }
}

extension [HTTPField] {
    /// The values of every field called `name` (compared case-insensitively), in order.
    package func values(named name: String) -> [String] {
        let wanted = name.lowercased()
        return filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The first value of a field called `name` (case-insensitive), if any.
    package func first(named name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.lowercased() == wanted }?.value
    }

    /// The value of `name` when exactly one field carries it; `nil` when it is absent or
    /// repeated (a structured field sent on several lines is a list, not an item: RFC 9651 §4.2).
    package func single(named name: String) -> String? {
        let values = values(named: name)
        return values.count == 1 ? values[0] : nil
    }
}
