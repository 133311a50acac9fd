import Foundation

/// A usage mistake on the command line, naming the offending argument.
///
/// Thread safety: a value type.
struct UsageError: Error, Equatable, CustomStringConvertible {
    let message: String
    var description: String { message }
    init(_ message: String) { self.message = message }
}
