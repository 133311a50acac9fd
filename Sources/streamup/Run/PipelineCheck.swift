import Foundation
import StreamUp
import StreamUpSystem
import StreamUpTail

#if canImport(Glibc)
import Glibc
#endif

/// `streamup run --check FILE`: what would stop FILE's pipelines, found without running them.
/// Every line parses (with `${NAME}` from the environment), every pipeline has an http(s) URL,
/// its state file's and spool's directories exist and are writable by this user, what it
/// follows (files, directories, `journal --directory`) is readable by this user, and its TLS
/// files are what an uploader takes. One line per
/// problem, naming its line; a secret from `${NAME}` is never shown.
///
/// Thread safety: stateless.
enum PipelineCheck {
    /// The problems of the file `text`, in line order (none: it can run).
    static func problems(of text: String, environment: [String: String]) -> [PipelineFile.Problem] {
        let (pipelines, unparsed) = PipelineFile.read(text, environment: environment)
        let found = pipelines.flatMap { pipeline in
            problems(of: pipeline).map { PipelineFile.Problem(line: pipeline.line, message: ShellWords.hiding(pipeline.secrets, in: $0)) }
        }
        return (unparsed + found).sorted { $0.line < $1.line }
    }

    /// What one pipeline that parsed cannot do on this machine, as this user.
    static func problems(of pipeline: PipelineFile.Pipeline) -> [String] {
        var problems: [String] = []
        let upload = pipeline.upload
        switch pipeline.command {
        case .tail(let options):
            if let state = options.stateFile { problems += stateProblems(state) }
            problems += FileTailer.readProblems(patterns: options.patterns, excludes: options.excludes)
        case .journal(let options):
            if let state = options.stateFile { problems += stateProblems(state) }
            if let directory = options.directory, let denied = denied(directory, R_OK | X_OK) {
                problems.append("the journal directory \(directory) \(denied)")
            }
        case .heartbeat:
            break
        case .help, .version, .upload, .sink, .run:
            preconditionFailure("a pipeline is tail, journal or heartbeat")
        }
        if let spool = upload.delivery.spoolDirectory { problems += directoryProblems(spool, "spool") }
        if let dead = upload.delivery.deadLetterDirectory { problems += directoryProblems(dead, "dead-letter directory") }
        // --cacert, --capath, --cert, --key: readable PEM, a key that is the certificate's.
        do {
            try upload.tls.configuration?.check()
        } catch {
            problems.append(error.description)
        }
        return problems
    }

    /// A state file whose directory is missing or not writable, or that is no state file.
    private static func stateProblems(_ path: String) -> [String] {
        let directory = PathComponents(path).directory
        if let denied = denied(directory.isEmpty ? "." : directory, W_OK | X_OK) { return ["the directory of the state file \(path) \(denied)"] }
        return TailRunner.stateFileProblem(path).map { [$0] } ?? []
    }

    /// A directory streamup makes if it is missing: it must be a writable directory, or be
    /// makeable in a writable parent.
    private static func directoryProblems(_ path: String, _ what: String) -> [String] {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { return ["the \(what) \(path) is not a directory"] }
            return denied(path, W_OK | X_OK).map { ["the \(what) \(path) \($0)"] } ?? []
        }
        let parent = PathComponents(path).directory
        return denied(parent.isEmpty ? "." : parent, W_OK | X_OK).map { ["the directory of the \(what) \(path) \($0)"] } ?? []
    }

    /// Why this user cannot `mode` `path` (`access(2)`: the real user, the one a service runs
    /// as), in words that follow the path: "does not exist", "is not writable by this user".
    private static func denied(_ path: String, _ mode: Int32) -> String? {
        guard access(path, mode) != 0 else { return nil }
        switch errno {
        case ENOENT, ENOTDIR: return "does not exist"
        case EACCES: return mode & W_OK != 0 ? "is not writable by this user" : "is not readable by this user"
        case EROFS: return "is on a read-only file system"
        case let code: return "cannot be used: \(String(cString: strerror(code)))"
        }
    }
}
