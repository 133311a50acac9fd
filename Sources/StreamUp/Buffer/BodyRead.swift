/// What one read of a body's bytes found: the buffer's live read
/// (``ReplayBuffer/readLive(into:blocking:)``) and every body stage above it answer with it.
enum BodyRead: Equatable {
    case bytes(Int)
    case end, wouldBlock
}
