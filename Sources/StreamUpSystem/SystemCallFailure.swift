/// An error type a ``SystemCall`` funnel can throw: made from the failed call's
/// ``SystemCallError`` (its operation and errno).
///
/// Thread safety: conformers are value types.
package protocol SystemCallFailure: Error {
    init(systemCall failure: SystemCallError)
}
