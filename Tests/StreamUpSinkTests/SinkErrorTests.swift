import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUpSink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every sink error is one line: what happened, the call and its reason, and what to do.
@Suite struct SinkErrorTests {
    /// Storage failures name the file and say what to do about the usual reasons.
    @Test(arguments: [
        (ENOSPC, "free some space, or choose another output directory"),
        (EACCES, "choose a directory this user can write to"),
        (ELOOP, "the sink never follows a symbolic link in its output directory: remove the link"),
        (EMFILE, "too many open files: raise the limit (ulimit -n) or lower the connection and upload limits"),
    ])
    func storageErrorsSayWhatToDo(errno: Int32, remedy: String) {
        let error = SinkError(.storage, operation: "write", errno: errno, detail: "/out/00000001-POST.partial")
        let reason = SinkError.message(forErrno: errno)
        #expect(error.description == "storage failed: write: /out/00000001-POST.partial: \(reason) (errno \(errno)); \(remedy)")
        #expect(!error.description.contains("\n"))
    }

    /// A real start-up failure: an output directory under a file.
    @Test func anOutputDirectoryUnderAFileIsOneLine() throws {
        let directory = try TemporaryDirectory()
        let file = "\(directory.path)/plain"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        #expect {
            _ = try SinkServer(configuration: SinkConfiguration(outputDirectory: "\(file)/received"))
        } throws: { error in
            guard let error = error as? SinkError else { return false }
            return error.code == .storage && error.operation == "mkdir"
                && error.description.hasPrefix("cannot create the output directory \(file)/received: mkdir: \(file): ")
                && error.description.hasSuffix("choose another directory") && !error.description.contains("\n")
        }
    }

    /// A host that does not resolve says which, and what to give instead.
    @Test func anUnresolvableHostIsOneLine() {
        #expect {
            _ = try SinkServer(configuration: SinkConfiguration(host: "no-such-host.invalid"))
        } throws: { error in
            guard let error = error as? SinkError else { return false }
            return error.code == .invalidAddress
                && error.description.hasPrefix("cannot listen on no-such-host.invalid: getaddrinfo: ")
                && error.description.hasSuffix("give a numeric address (127.0.0.1, ::1, 0.0.0.0) or a name this machine resolves")
        }
    }
}
