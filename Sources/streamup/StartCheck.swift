/// Checks that need the running process rather than argv (a closed stdin, a `-o FILE` that
/// cannot be written): each fails the command as a usage error before anything is sent.
///
/// Thread safety: stateless.
enum StartCheck {
    /// Throws `problem` as a ``UsageError``, if there is one.
    static func refuse(_ problem: String?) throws(UsageError) {
        if let problem { throw UsageError(problem) }
    }
}

extension UploadOptions {
    /// Why `-o FILE` cannot take the answer, when that shows before anything is sent.
    var outputProblem: String? {
        outputFile.flatMap(ResultOutput.problem(writing:)).map { "-o: \($0)" }
    }
}
