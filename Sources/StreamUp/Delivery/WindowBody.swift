import Foundation
import StreamUpSystem

/// The body of one segment request: a fresh ``WindowSource`` over the replay buffer for every
/// stream URLSession asks for, so that a body libcurl must re-send (a reused connection that
/// turned out dead) goes out again from the segment's start, read from the buffer. Resumable
/// appends refuse a re-send instead: a PATCH re-sent with its stale `Upload-Offset` after part
/// of it arrived would conflict; the request fails and HEAD says where to go on.
///
/// Thread safety: `current` is guarded by a `Mutex`; URLSession asks for streams on its
/// delegate queue, the uploader reads the outcome after the request.
final class WindowBody: RequestBody, Sendable {
    private struct Current {
        var window: WindowSource?
        var stream: StreamReference<BodyInputStream>?
        var refused: StreamUpError?
        /// The furthest offset an earlier stream of this request handed out.
        var furthest: Int
    }
    private let makeSource: @Sendable () -> (window: WindowSource, top: any BodySource)
    private let allowsResend: Bool
    private let current: Mutex<Current>
    let start: Int

    /// - Parameter makeSource: builds the stages of one attempt: the window and the stage
    ///   URLSession reads (the window itself, or an encoding stage over it).
    init(start: Int, allowsResend: Bool, makeSource: @escaping @Sendable () -> (window: WindowSource, top: any BodySource)) {
        self.start = start
        self.allowsResend = allowsResend
        self.makeSource = makeSource
        self.current = Mutex(Current(furthest: start))
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let previous = current.withLock { current in
            current.furthest = max(current.furthest, current.window?.outcome.end ?? current.furthest)
            return current.window
        }
        if attempt > 1 {
            let again = StreamUpError(.bodyNotRewindable, "URLSession asked to send the segment again")
            previous?.abort(again)
            guard allowsResend else {
                current.withLock { $0.refused = again }
                return nil
            }
        }
        let (window, top) = makeSource()
        let stream = BodyInputStream(source: top)
        current.withLock {
            $0.window = window
            $0.stream = StreamReference(stream)
        }
        return stream
    }

    /// What the request carried: from its start to the furthest any of its streams got (a
    /// stream libcurl gave up on for a re-send counts: its bytes went out), and how the latest
    /// stream ended.
    var outcome: WindowSource.Outcome {
        current.withLock { current in
            var outcome = current.window?.outcome ?? WindowSource.Outcome(start: start, end: start, reachedInputEnd: false)
            outcome.end = max(outcome.end, current.furthest)
            return outcome
        }
    }

    var bytesSent: Int { current.withLock { $0.stream?.value.bytesRead ?? 0 } }

    var failure: StreamUpError? {
        current.withLock { $0.refused ?? ($0.stream?.value.streamError as? StreamUpError) }
    }

    func close() {
        abort(StreamUpError(.bodyStreamClosed, "the request has ended"))
    }

    func abort(_ error: StreamUpError) {
        current.withLock { $0.window }?.abort(error)
    }
}
