import Foundation
import StreamUp
import Synchronization

/// `streamup tail [options] FILE [URL]`: follow a file like `tail -F` and stream what is appended.
///
/// Thread safety: a value type.
struct TailOptions: Sendable, Equatable {
    var upload = UploadOptions()
    var path = ""
    var fromStart = false
    var stateFile: String?

    static let table: [OptionSpec<TailOptions>] = [
        .flag("--from-start", help: "send what the file already holds, then follow (default: start at its end)") { $0.fromStart = true },
        .value("--state", valueName: "FILE", help: "remember the acknowledged position in FILE and continue from it on the next start") { options, value in
            options.stateFile = value
        },
    ] + UploadOptions.table.map { $0.lifted(\TailOptions.upload) }

    static let help = """
        usage: streamup tail [options] FILE [URL]

        Follows FILE by name like `tail -F` and streams every byte appended to it, in order and
        once, as one long chunked request to URL (without URL: to a local sink).
          - starts at the end of the file (--from-start: at its beginning);
          - follows rename rotation (logrotate `create`): the old file is read to its end, then
            the new one from its start; notices truncation (`copytruncate`) and goes on from the
            new start; waits for a file that does not exist yet or was deleted and re-created;
          - uses inotify, so an appended line leaves within milliseconds (polling only where
            inotify is unavailable);
          - reads only while the upload keeps up: a slow server never makes memory grow.

        With --state FILE, the position (device, inode, offset) is saved atomically once the
        server has acknowledged the data (a 2xx answer), and the next start continues from it:
        acknowledged data is never sent twice, and nothing is skipped. As one request, a stream
        is acknowledged when it ends (SIGINT/SIGTERM); with --retries / --segment-seconds the
        position moves at every acknowledged segment, so even after a crash (SIGKILL) at most
        the unacknowledged segment is sent again. With --spool DIR as well, the position
        follows what is safely in the spool (saved every 100 ms, with the stream offset it
        stands for) and the spool keeps what the server has not acknowledged: a restart sends
        the spool first, then goes on from the position, skipping what the spool already held
        past it. Even after kill -9, every byte arrives once.

        options:
        \(helpLines(for: table))
        """
}

/// Runs the tail command.
///
/// Thread safety: runs on the main task.
enum TailRunner {
    static func run(_ options: TailOptions) async -> Int32 {
        if let problem = startProblem(options) {
            Terminal.error("tail: \(problem)")
            return ExitStatus.usage
        }
        let follower: FileFollower
        do {
            follower = FileFollower(
                path: options.path, startAt: options.fromStart ? .beginning : .end,
                format: try options.upload.records.formatter(path: options.path))
        } catch {
            Terminal.error("tail: \(error)")
            return ExitStatus.usage
        }
        return await UploadRunner.withTarget(options.upload) { url in
            guard options.upload.delivery.singleRequest else {
                // Acknowledged segments: the uploader keeps the state file (exactly once).
                return await UploadRunner.upload(options.upload, to: url, producer: follower, stateFile: options.stateFile).status
            }
            // One request: the state moves only when its 2xx acknowledges the whole body.
            if let stateFile = options.stateFile {
                do {
                    follower.resume(from: try SourceState.load(from: stateFile)?.sources ?? [])
                } catch {
                    Terminal.error("tail: \(error)")
                    return ExitStatus.usage
                }
            }
            let (status, response) = await UploadRunner.upload(options.upload, to: url, producer: follower)
            if let stateFile = options.stateFile, response?.isSuccess == true, let state = follower.state {
                do {
                    let position = SourcePosition(source: SourceID(device: state.device, inode: state.inode), path: state.path, offset: state.offset)
                    try SourceState(sources: [position]).save(to: stateFile)
                } catch {
                    Terminal.error("tail: cannot save the state file: \(error)")
                    return ExitStatus.noAnswer
                }
            }
            return status
        }
    }

    /// What makes the command unable to work, said at start rather than at the first save.
    static func startProblem(_ options: TailOptions) -> String? {
        if let stateFile = options.stateFile {
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
