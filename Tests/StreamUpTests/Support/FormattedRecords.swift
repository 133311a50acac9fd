@testable import StreamUp

/// 2023-11-14T22:13:20.123Z, the read time the record tests stamp unless they say otherwise.
let recordsReadAt: Int64 = 1_700_000_000_123

/// The records `formatter` makes of `lines`, each read at `milliseconds` (default
/// ``recordsReadAt``), one after another.
func records(_ formatter: inout RecordFormatter, _ lines: [[UInt8]], at milliseconds: Int64 = recordsReadAt) -> [UInt8] {
    var output: [UInt8] = []
    for line in lines {
        line.withUnsafeBytes { formatter.append($0, milliseconds: milliseconds, to: &output) }
    }
    return output
}
