import Foundation
import StreamUp
import StreamUpTail

/// Runs the tail command, alone or as a pipeline of `streamup run` (`supervision`).
///
/// Thread safety: runs on the caller's task.
enum TailRunner {
    static func run(_ options: TailOptions, supervision: UploadSession.Supervision = .alone) async -> Int32 {
        let session = UploadSession(options.upload, supervision: supervision)
        if let problem = startProblem(options) {
            session.say("tail: \(problem)")
            return ExitStatus.usage
        }
        // A run that can never read a line ends now, with the reason.
        if let nothing = FileTailer.nothingToFollow(patterns: options.patterns) {
            session.say("tail: \(nothing)")
            return ExitStatus.ioFailure
        }
        // One process per state file, and one that can save it: refused now, before a line is sent.
        let owner: StateFileOwner?
        do {
            owner = try options.stateFile.map { try StateFileOwner.claim($0) }
        } catch {
            session.say("tail: \(error)")
            return ExitStatus.ioFailure
        }
        defer { withExtendedLifetime(owner) {} }
        let tailer: FileTailer
        do {
            // The records stdin and heartbeat get too (a preset's format unless --format says
            // otherwise); a bad key set is a usage error now, not per file.
            let upload = options.upload
            var format: (@Sendable (String) -> RecordFormatter?)?
            if try upload.recordFormatter(path: "") != nil {
                format = { path in try? upload.recordFormatter(path: path) }
            }
            // --parse: a formatter per file and stream, with the container's fields.
            var formatFields: (@Sendable (String, [(name: String, value: String)]) -> RecordFormatter?)?
            if upload.records.parse != nil {
                _ = try upload.multilineFormatter(path: "", extra: [(name: "stream", value: "stdout")])
                formatFields = { path, fields in try? upload.multilineFormatter(path: path, extra: fields) }
            }
            tailer = try FileTailer(
                patterns: options.patterns, options: options.tailerOptions,
                onEvent: { event in session.log(event) }, format: format, formatFields: formatFields)
        } catch {
            session.say("tail: \(error)")
            return ExitStatus.usage
        }
        return await session.withTarget { url in
            guard options.upload.delivery.singleRequest else {
                // Acknowledged segments: the uploader keeps the state file (exactly once).
                return await session.run(
                    to: url, producer: tailer, stateFile: options.stateFile, forgetSourcesAfter: options.forgetAfter, files: tailer
                ).status
            }
            // One request: the state moves only when its 2xx acknowledges the whole body.
            if let stateFile = options.stateFile {
                do {
                    tailer.resume(from: try SourceState.load(from: stateFile)?.sources ?? [], savedAt: SourceState.lastSaved(at: stateFile))
                } catch {
                    session.say("tail: \(error)")
                    return ExitStatus.usage
                }
            }
            let (status, response) = await session.run(to: url, producer: tailer, files: tailer)
            if let stateFile = options.stateFile, response?.isSuccess == true {
                do {
                    try SourceState(sources: tailer.positions).save(to: stateFile)
                } catch {
                    session.say("tail: cannot save the state file: \(error)")
                    return ExitStatus.ioFailure
                }
            }
            return status
        }
    }

    /// What makes the command unable to work, said at start rather than at the first save.
    static func startProblem(_ options: TailOptions) -> String? {
        stateFileProblem(options.stateFile)
    }

    /// What makes `stateFile` unusable (its directory missing, a file that is not a state).
    static func stateFileProblem(_ stateFile: String?) -> String? {
        if let stateFile {
            let directory = (stateFile as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
                return "the directory of the state file \(stateFile) does not exist"
            }
            do {
                _ = try SourceState.load(from: stateFile)
            } catch {
                return "\(error)"
            }
        }
        return nil
    }
}
