import Foundation
import StreamUpSystem

/// Where a bound stream delivers its delegate events: a run loop (in chosen modes), as
/// `Stream.schedule(in:forMode:)` asks, or a dispatch queue.
///
/// Thread safety: immutable; delivery may be requested from any thread.
enum StreamEventTarget: @unchecked Sendable {
    // RunLoop is not Sendable; we only ever add a timer to it, which CFRunLoop allows from any
    // thread.
    case runLoop(RunLoop, [RunLoop.Mode])
    case queue(DispatchQueue)

    /// The order in which several events due at once are delivered.
    private static let order: [Stream.Event] = [
        .openCompleted, .hasBytesAvailable, .hasSpaceAvailable, .errorOccurred, .endEncountered,
    ]

    /// Calls `stream.delegate` once per event in `events`, on this target.
    func deliver(_ events: Stream.Event, from stream: StreamReference<some Stream>) {
        let handle: @Sendable () -> Void = {
            for event in Self.order where events.contains(event) {
                #if canImport(Darwin)
                stream.value.delegate?.stream?(stream.value, handle: event)
                #else
                stream.value.delegate?.stream(stream.value, handle: event)
                #endif
            }
        }
        switch self {
        case .queue(let queue):
            queue.async(execute: handle)
        case .runLoop(let runLoop, let modes):
            // `RunLoop.perform(inModes:block:)` does not wake a sleeping run loop on Linux; adding
            // a timer does (CFRunLoopAddTimer arms the loop's timer). The timer fires once, in
            // whichever of the modes the loop runs first.
            let once = OnceFlag()
            let timer = Timer(fire: Date(), interval: 0, repeats: false) { _ in
                if once.claim() { handle() }
            }
            for mode in modes { runLoop.add(timer, forMode: mode) }
        }
    }
}

/// True for the first caller of `claim()` only.
///
/// Thread safety: guarded by a `Mutex`; callable from any thread.
private final class OnceFlag: Sendable {
    private let claimed = Mutex(false)
    func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
