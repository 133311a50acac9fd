import Foundation
import StreamUp
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls here throw ``StreamUpError``, as the library's do.
private typealias SystemCall = StreamUpSystem.SystemCall<StreamUpError>

/// Reads a small file that holds a secret (a token, header fields) as text, with one-line
/// errors that say what to do. A regular file is read afresh at every ``read()`` (a rotated
/// secret is seen by the next request); anything else (a pipe from `<(…)`, `/dev/stdin`) can
/// be read only once, so its first contents are kept.
///
/// Thread safety: the kept contents are written once, in `init`, and never changed.
struct SecretFile: Sendable {
    /// At most this much is read: a secret is small, and a wrong path (a log file) should not
    /// fill memory.
    static let maxBytes = 64 * 1024

    let path: String
    /// "token file", "header file": what the messages call it.
    let kind: String
    /// The contents of a file that is not a regular file, read once.
    private let kept: String?

    /// Reads the file once now, so a missing or bad file fails at start.
    init(path: String, kind: String) throws(StreamUpError) {
        self.path = path
        self.kind = kind
        let (text, isRegular) = try Self.load(path, kind: kind)
        kept = isRegular ? nil : text
    }

    /// The file's text now.
    func read() throws(StreamUpError) -> String {
        if let kept { return kept }
        return try Self.load(path, kind: kind).text
    }

    private static func load(_ path: String, kind: String) throws(StreamUpError) -> (text: String, isRegular: Bool) {
        let fd = SystemCall.retryingInterrupts { SystemCall.open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw StreamUpError(.io, "cannot read the \(kind) \(path): \(reason); check the path and that streamup may read it")
        }
        defer { SystemCall.close(fd) }
        var info = stat()
        let isRegular = fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        guard (info.st_mode & S_IFMT) != S_IFDIR else {
            throw StreamUpError(.io, "the \(kind) \(path) is a directory: give the path of the file itself")
        }
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var count = 0
        while count < bytes.count {
            let read = bytes.withUnsafeMutableBytes { raw in
                SystemCall.retryingInterrupts { systemRead(fd, raw.baseAddress! + count, raw.count - count) }
            }
            if read < 0 {
                let reason = String(cString: strerror(errno))
                throw StreamUpError(.io, "cannot read the \(kind) \(path): \(reason); check the path and that streamup may read it")
            }
            if read == 0 { break }
            count += read
        }
        guard count <= maxBytes else {
            throw StreamUpError(.io, "the \(kind) \(path) holds more than \(maxBytes / 1024) KiB: it should hold only the secret; check the path")
        }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
            throw StreamUpError(.io, "the \(kind) \(path) is not UTF-8 text: it should hold only the secret, as text")
        }
        return (text, isRegular)
    }
}

/// `read(2)`, under a name the type's own `read()` does not hide.
private func systemRead(_ fd: CInt, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}
