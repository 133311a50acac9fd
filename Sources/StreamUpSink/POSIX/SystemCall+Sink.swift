import StreamUpSystem

/// The sink's system calls: ``StreamUpSystem/SystemCall`` throwing ``SinkError``
/// (`.systemCall`, the C function's name and the errno).
typealias SystemCall = StreamUpSystem.SystemCall<SinkError>

extension SinkError: SystemCallFailure {
    package init(systemCall failure: SystemCallError) {
        self = .systemCall(failure.operation, errno: failure.errno)
    }
}
