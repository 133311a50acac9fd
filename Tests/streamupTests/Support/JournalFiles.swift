import Foundation
import StreamUpTestSupport
import Testing

/// Journal files in a temporary directory, written as a journal would: entries in journal
/// export format, turned into a journal file by Debian's `systemd-journal-remote` (no running
/// journald needed); `journalctl --directory` (and `streamup journal --directory`) reads them.
/// Each ``append(_:)`` adds to the same file, as a running journal does; files of other
/// `name`s in the same directory are other journals (another boot, another host: each has a
/// sequence-number id of its own).
///
/// Thread safety: a value type; its counter is its own.
struct JournalFiles {
    static let remote = "/lib/systemd/systemd-journal-remote"

    /// Whether this machine can write journal files and read them (`.ci/run` installs both).
    static var isAvailable: Bool {
        let available = FileManager.default.isExecutableFile(atPath: remote) && (try? ExternalTool.run(["journalctl", "--version"]).status) == 0
        if !available { print("skipped: the journal tests need systemd-journal-remote and journalctl (apt-get install systemd-journal-remote)") }
        return available
    }

    /// One entry: its message (any bytes), unit and priority.
    struct Entry {
        var message: [UInt8]
        var unit = "app.service"
        var priority = "6"

        init(_ message: String, unit: String = "app.service", priority: String = "6") {
            self.init(bytes: Array(message.utf8), unit: unit, priority: priority)
        }

        init(bytes: [UInt8], unit: String = "app.service", priority: String = "6") {
            message = bytes
            self.unit = unit
            self.priority = priority
        }
    }

    /// The host every entry names.
    static let host = "web-1"
    /// The time of the first entry: a whole second a minute ago (receivers refuse entries days
    /// old), then a millisecond more for each entry.
    static let baseMilliseconds: Int64 = (Int64(Date().timeIntervalSince1970) - 60) * 1000

    let directory: String
    /// The file's name in the directory (`NAME.journal`) and the boot its entries name.
    let name: String
    let boot: String
    private(set) var written = 0

    /// The file `name` in `directory` (created if need be) that holds `written` entries already,
    /// of boot `boot` (32 hexadecimal digits).
    init(directory: String, name: String = "app", boot: String = "0123456789abcdef0123456789abcdef", written: Int = 0) throws {
        self.directory = directory
        self.name = name
        self.boot = boot
        self.written = written
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The time of entry `index`, in milliseconds since 1970.
    static func milliseconds(of index: Int) -> Int64 { baseMilliseconds + Int64(index) }

    /// Writes `entries` after those written before.
    mutating func append(_ entries: [Entry]) throws {
        var export: [UInt8] = []
        for entry in entries {
            let microseconds = Self.milliseconds(of: written) * 1000
            written += 1
            export += Array("__REALTIME_TIMESTAMP=\(microseconds)\n__MONOTONIC_TIMESTAMP=\(written)\n".utf8)
            export += Array("_BOOT_ID=\(boot)\n_HOSTNAME=\(Self.host)\nSYSLOG_IDENTIFIER=app\n".utf8)
            export += Array("_SYSTEMD_UNIT=\(entry.unit)\nPRIORITY=\(entry.priority)\n".utf8)
            // The binary form (name, newline, little-endian 64-bit length, bytes) carries any bytes.
            export += Array("MESSAGE\n".utf8)
            withUnsafeBytes(of: UInt64(entry.message.count).littleEndian) { export += $0 }
            export += entry.message + [0x0A, 0x0A]
        }
        let input = directory + "/\(name).export"
        try Data(export).write(to: URL(fileURLWithPath: input))
        let result = try ExternalTool.run([Self.remote, "--output=\(directory)/\(name).journal", input])
        try #require(result.status == 0, "systemd-journal-remote: \(result.errorText)")
    }
}
