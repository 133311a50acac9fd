import Foundation

/// A JSON scalar for a heartbeat's final record.
///
/// Thread safety: a value type.
package enum JSONValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    func add(to line: inout JSONLine, as name: String) {
        switch self {
        case .string(let value): line.add(name, value)
        case .int(let value): line.add(name, value)
        case .double(let value): line.add(name, value, decimals: 3)
        case .bool(let value): line.add(name, value)
        }
    }
}
