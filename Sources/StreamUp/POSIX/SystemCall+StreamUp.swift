import StreamUpSystem

/// The library's system calls: ``StreamUpSystem/SystemCall`` throwing ``StreamUpError`` (`.io`,
/// the operation's words and the errno). Call sites pass what was being done
/// (`"cannot open \(path)"`) as the operation, which becomes the error's context.
typealias SystemCall = StreamUpSystem.SystemCall<StreamUpError>

extension StreamUpError: SystemCallFailure {
    package init(systemCall failure: SystemCallError) {
        self.init(.io, failure.operation, errno: failure.errno)
    }
}
