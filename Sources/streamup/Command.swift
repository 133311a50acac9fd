/// What the command line asks for.
///
/// Thread safety: a value type.
enum Command: Equatable {
    case help(String)
    case version
    case upload(UploadOptions)
    case sink(SinkOptions)
    case heartbeat(HeartbeatOptions)
    case tail(TailOptions)
    case journal(JournalOptions)
    case run(RunOptions)
}
