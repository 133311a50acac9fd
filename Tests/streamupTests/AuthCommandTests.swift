import Foundation
import StreamUpTestSupport
import Testing

/// Credentials through the built binary against the real sink: `-u` (with the password on the
/// command line or in STREAMUP_PASSWORD), token files read for every request, `-H @FILE`, and
/// the one-line errors when they cannot work.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AuthCommandTests {
    /// `streamup arguments…` with `environment` added to (or, for nil values, removed from) its
    /// environment, through env(1).
    private func streamup(_ arguments: [String], environment: [String: String?]) throws -> StreamupProcess {
        let unset = environment.filter { $0.value == nil }.flatMap { ["-u", $0.key] }
        let set = environment.compactMap { name, value in value.map { "\(name)=\($0)" } }
        return try StreamupProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"), unset + set + [StreamupProcess.executable.path] + arguments)
    }

    private func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// `-u USER:PASSWORD`, and `-u USER` with STREAMUP_PASSWORD (which -u's own password beats):
    /// the request carries Basic credentials.
    @Test(
        arguments: [
            (["-u", "alice:from-argv"], ["STREAMUP_PASSWORD": nil], "from-argv"),
            (["-u", "alice"], ["STREAMUP_PASSWORD": "from-env"], "from-env"),
            (["-u", "alice:from-argv"], ["STREAMUP_PASSWORD": "from-env"], "from-argv"),
            (["-u", "alice:"], ["STREAMUP_PASSWORD": "from-env"], ""),
        ] as [([String], [String: String?], String)])
    func basicCredentialsAreSent(arguments: [String], environment: [String: String?], password: String) async throws {
        try await withSink { sink, _ in
            let child = try streamup(arguments + [sink.url.absoluteString], environment: environment)
            child.write("line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(sink.requests.last?.headers.first(named: "Authorization") == basic("alice", password))
        }
    }

    /// `-u USER` with no password anywhere is a usage error that says where to put one; nothing
    /// is sent.
    @Test func userWithoutPasswordIsAUsageError() async throws {
        let server = try StubHTTPServer(.answerAfterBody(status: 200))
        defer { server.stop() }
        let child = try streamup(["-u", "alice", server.url], environment: ["STREAMUP_PASSWORD": nil])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == "streamup: -u alice: no password; give -u alice:PASSWORD, or set STREAMUP_PASSWORD (which keeps it out of ps)\n")
        #expect(server.receivedHeads.isEmpty)
    }

    /// `streamup heartbeat -u USER … -- COMMAND`: the command does not inherit the password
    /// from STREAMUP_PASSWORD (it used to get streamup's whole environment).
    @Test func heartbeatCommandDoesNotSeeThePassword() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let seen = work.appendingPathComponent("seen").path
        try await withSink { sink, _ in
            let child = try streamup(
                [
                    "heartbeat", "--every", "10s", "-u", "alice", sink.url.absoluteString, "--",
                    "sh", "-c", "echo \"${STREAMUP_PASSWORD:-unset}\" > '\(seen)'",
                ],
                environment: ["STREAMUP_PASSWORD": "hb-secret"])
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            #expect(try String(contentsOfFile: seen, encoding: .utf8) == "unset\n")
            #expect(sink.requests.last?.headers.first(named: "Authorization") == basic("alice", "hb-secret"))
        }
    }

    /// How a token file is rotated: renamed into place (atomic; Kubernetes' mounted secrets,
    /// most secret agents) or rewritten in place.
    enum Rotation: String, CaseIterable, Sendable { case rename, inPlace }

    /// A token file rotated between two acknowledged segments: the first request carries the
    /// old token, the next one the new token, with no restart. The same for `-H @FILE`.
    @Test(arguments: Rotation.allCases, [false, true])
    func rotatedSecretIsUsedByTheNextRequest(rotation: Rotation, headerFile: Bool) async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let file = work.appendingPathComponent("secret")
        func write(_ token: String) throws {
            let text = headerFile ? "# rotated by the test\nX-API-Key: \(token)\n" : "\(token)\n"
            switch rotation {
            case .rename:
                let fresh = work.appendingPathComponent("secret.new")
                try Data(text.utf8).write(to: fresh)
                guard rename(fresh.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
            case .inPlace:
                let handle = try FileHandle(forWritingTo: file)
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: Data(text.utf8))
                try handle.close()
            }
        }
        try Data().write(to: file)
        try write("token-one")
        try await withSink { sink, directory in
            let option = headerFile ? ["-H", "@" + file.path] : ["--bearer-token-file", file.path]
            let child = try StreamupProcess(option + [sink.url.absoluteString])
            child.write("first\n")
            // Given the first segment acknowledged,
            #expect(await eventually { sink.requests.count == 1 && sink.requests[0].status == 200 })
            // when the token changes, the next line's request carries the new one.
            try write("token-two")
            child.write("second\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let field = headerFile ? "X-API-Key" : "Authorization"
            let prefix = headerFile ? "" : "Bearer "
            #expect(sink.requests.map { $0.headers.first(named: field) } == [prefix + "token-one", prefix + "token-two"])
            #expect(streamText(in: directory) == "first\nsecond\n")
        }
    }

    /// `-H @FILE`: every field of the file is sent (comments and blank lines skipped) beside
    /// the command line's own `-H`.
    @Test func headerFileFieldsAreSent() async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        let file = work.appendingPathComponent("headers")
        try Data("# Datadog\nDD-API-KEY: dd-key\n\nX-Scope-OrgID: tenant-1\r\n".utf8).write(to: file)
        try await withSink { sink, _ in
            let child = try StreamupProcess(["-H", "X-Stream: app", "-H", "@" + file.path, "--single-request", sink.url.absoluteString])
            child.write("line\n")
            child.closeStdin()
            #expect(await child.waitForExit() == 0, "stderr: \(child.stderr)")
            let headers = try #require(sink.requests.last?.headers)
            #expect(headers.first(named: "X-Stream") == "app")
            #expect(headers.first(named: "DD-API-KEY") == "dd-key")
            #expect(headers.first(named: "X-Scope-OrgID") == "tenant-1")
        }
    }

    /// Files that cannot give credentials, and credentials given twice, stop streamup before it
    /// sends anything, with one line that says what to do (exit 64).
    @Test(arguments: [
        (
            ["--bearer-token-file", "WORK/missing"],
            "streamup: cannot read the token file WORK/missing: No such file or directory; check the path and that streamup may read it\n"
        ),
        (["--bearer-token-file", "WORK/empty"], "streamup: the token file WORK/empty is empty: write the token into it\n"),
        (
            ["--bearer-token-file", "WORK/two-lines"],
            "streamup: the token file WORK/two-lines holds more than one line: it must hold only the token, on one line\n"
        ),
        (
            ["-H", "@WORK/two-lines"],
            "streamup: line 1 of the header file WORK/two-lines is not 'Name: value' (its contents are not shown: they may be secret)\n"
        ),
        (
            ["-H", "@WORK/missing"],
            "streamup: cannot read the header file WORK/missing: No such file or directory; check the path and that streamup may read it\n"
        ),
        (["-u", "a:b", "--bearer-token-file", "WORK/token"], "streamup: --bearer-token-file and -u both set Authorization: give one\n"),
        (["-H", "Authorization: Bearer x", "-u", "a:b"], "streamup: -u and -H 'Authorization: …' both set Authorization: give one\n"),
        (
            ["-H", "@WORK/authorization", "--bearer-token-file", "WORK/token"],
            "streamup: -H @WORK/authorization and --bearer-token-file both set Authorization: give one\n"
        ),
        (["-u", ":secret-one"], "streamup: -u: the user name is empty (USER[:PASSWORD])\n"),
        (["--token-header", "DD-API-KEY"], "streamup: --token-header names the field for --token-file's token: add --token-file FILE\n"),
    ])
    func unusableCredentialsAreAUsageError(arguments: [String], message: String) async throws {
        let scratch = try TemporaryDirectory()
        let work = scratch.url
        try Data().write(to: work.appendingPathComponent("empty"))
        try Data("secret-one\nsecret-two\n".utf8).write(to: work.appendingPathComponent("two-lines"))
        try Data("token\n".utf8).write(to: work.appendingPathComponent("token"))
        try Data("Authorization: Basic eA==\n".utf8).write(to: work.appendingPathComponent("authorization"))
        let server = try StubHTTPServer(.answerAfterBody(status: 200))
        defer { server.stop() }
        let child = try StreamupProcess(arguments.map { $0.replacingOccurrences(of: "WORK", with: work.path) } + [server.url])
        child.closeStdin()
        #expect(await child.waitForExit() == 64)
        #expect(child.stderr == message.replacingOccurrences(of: "WORK", with: work.path))
        #expect(!child.stderr.contains("secret-one"))
        #expect(server.receivedHeads.isEmpty)
    }
}
