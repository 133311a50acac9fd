import StreamUp
import StreamUpSystem

/// The tailer's system calls: ``StreamUpSystem/SystemCall`` throwing `StreamUpError` (`.io`,
/// the operation's words and the errno), as in the core.
typealias SystemCall = StreamUpSystem.SystemCall<StreamUpError>
