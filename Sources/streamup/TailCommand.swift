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
        let state: FollowState?
        do {
            state = try options.stateFile.flatMap { try FollowState.load(from: $0) }
        } catch {
            Terminal.error("tail: cannot read the state file: \(error)")
            return ExitStatus.usage
        }
        let follower = FileFollower(path: options.path, startAt: options.fromStart ? .beginning : .end, state: state)
        return await UploadRunner.withTarget(options.upload) { url in
            // The stream the follower's bytes go into, once the reliable uploader is made.
            let stream = Mutex<(id: String, start: Int)?>(nil)
            // With segmented delivery the position moves at every acknowledged segment (with a
            // spool: as bytes reach it), and says which stream offset it stands for.
            let saveSecured: @Sendable (Int) -> Void = { secured in
                guard let stateFile = options.stateFile, var state = follower.state(acknowledging: secured) else { return }
                if let (id, start) = stream.withLock({ $0 }) {
                    state.streamID = id
                    state.streamOffset = start + secured
                }
                do {
                    try state.save(to: stateFile)
                } catch {
                    Terminal.error("tail: cannot save the state file: \(error)")
                }
            }
            let prepare: (ReliableUploader) -> Void = { uploader in
                stream.withLock { $0 = (uploader.streamID, uploader.producerStart) }
                // A spool that holds the stream past the saved position: those bytes are not
                // read again (exactly once across a crash).
                if let state, state.streamID == uploader.streamID, let saved = state.streamOffset, uploader.producerStart > saved {
                    follower.skip(firstBytes: uploader.producerStart - saved)
                }
            }
            let (status, response) = await UploadRunner.upload(
                options.upload, to: url, producer: follower, onSecured: saveSecured, prepare: prepare)
            // Every byte the follower wrote went out before the body ended, and a 2xx answer
            // acknowledges the whole body: only then does the saved position move.
            if let stateFile = options.stateFile, response?.isSuccess == true, let position = follower.state {
                do {
                    try position.save(to: stateFile)
                } catch {
                    Terminal.error("tail: cannot save the state file: \(error)")
                    return ExitStatus.noAnswer
                }
            }
            return status
        }
    }
}
