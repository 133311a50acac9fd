import Foundation
import StreamUp

/// How lines become records: the CLI side of ``RecordFormatter``.
///
/// Thread safety: a value type.
struct RecordOptions: Sendable, Equatable {
    var format: RecordFormat = .raw
    var fields: [(String, String)] = []
    var keys = RecordFormatter.Keys()
    /// `--to NAME` and `--label`s (ReceiverOptions.swift).
    var receiver: Receiver?
    var labels: [(String, String)] = []
    /// The record options given on the command line (a preset's values give way to them).
    var given: Set<String> = []

    static func == (lhs: RecordOptions, rhs: RecordOptions) -> Bool {
        lhs.format == rhs.format && lhs.keys == rhs.keys && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
            && lhs.receiver == rhs.receiver && lhs.labels.elementsEqual(rhs.labels) { $0 == $1 } && lhs.given == rhs.given
    }

    /// The formatter for records read at `path` (nil for stdin), or nil for raw lines.
    func formatter(path: String? = nil) throws -> RecordFormatter? {
        guard effectiveFormat != .raw else { return nil }
        if let receiver {
            return try receiver.formatter(
                format: effectiveFormat, keys: effectiveKeys, path: path, fields: fields.map { (name: $0.0, value: $0.1) },
                labels: labels.map { (name: $0.0, value: $0.1) })
        }
        return try RecordFormatter(format: format, keys: keys, path: path, fields: fields.map { (name: $0.0, value: $0.1) })
    }
}
