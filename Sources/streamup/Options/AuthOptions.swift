import Foundation
import StreamUp

/// Credentials on the command line: `-u USER[:PASSWORD]`, a token file (`--bearer-token-file`,
/// or `--token-file` in the field a preset or `--token-header` names) and header files
/// (`-H @FILE`). Secrets in files are read again for every request; the parser only records
/// what was given, and ``headerProvider(environment:literalHeaders:)`` reads it.
///
/// Thread safety: a value type.
struct AuthOptions: Sendable, Equatable {
    /// `-u` as given: `USER` or `USER:PASSWORD`.
    var user: String?
    /// The token file and the option that named it.
    var tokenFile: TokenFileOption?
    /// `--token-header`: the field carrying the token, for `--token-file`.
    var tokenHeader: TokenHeaderStyle?
    /// The field carrying `--token-file`'s token when `--token-header` is not given: a preset's
    /// style (`--to splunk-hec`: `Authorization: Splunk`), `Authorization: Bearer` otherwise.
    var defaultTokenHeader: TokenHeaderStyle = .bearer
    /// `-H @FILE`, in order.
    var headerFiles: [String] = []

    /// A token file and whether it was `--bearer-token-file` (always `Authorization: Bearer`).
    ///
    /// Thread safety: a value type.
    struct TokenFileOption: Sendable, Equatable {
        var path: String
        var bearer: Bool
        var option: String { bearer ? "--bearer-token-file" : "--token-file" }
    }

    /// Where `-u` takes the password from when it has none.
    static let passwordVariable = "STREAMUP_PASSWORD"

    static let table: [OptionSpec<AuthOptions>] = [
        .value(
            "-u", "--user", valueName: "USER[:PASSWORD]",
            group: .receivers, help: "HTTP Basic; the password from $STREAMUP_PASSWORD unless given"
        ) { options, value throws(UsageError) in
            guard options.user == nil else { throw UsageError("-u: given twice") }
            guard !value.isEmpty, !value.hasPrefix(":") else { throw UsageError("-u: the user name is empty (USER[:PASSWORD])") }
            options.user = value
        },
        .value(
            "--bearer-token-file", valueName: "FILE",
            group: .receivers, help: "send Authorization: Bearer TOKEN, read from FILE for every request"
        ) { options, value throws(UsageError) in
            try options.setTokenFile(value, bearer: true)
        },
        .value(
            "--token-file", valueName: "FILE",
            group: .receivers, help: "like --bearer-token-file, in the field --token-header names"
        ) { options, value throws(UsageError) in
            try options.setTokenFile(value, bearer: false)
        },
        .value(
            "--token-header", valueName: "'NAME[: SCHEME]'",
            group: .receivers, help: "the field for --token-file: 'Authorization: Splunk', 'DD-API-KEY'"
        ) { options, value throws(UsageError) in
            guard let style = TokenHeaderStyle(parsing: value) else {
                throw UsageError(
                    "--token-header: '\(UploadConfiguration.Header.escaped(value))' is not NAME or 'NAME: SCHEME' (e.g. 'Authorization: Splunk', DD-API-KEY)")
            }
            if let problem = style.header(token: "x").problem { throw UsageError("--token-header: \(problem)") }
            options.tokenHeader = style
        },
    ]

    private mutating func setTokenFile(_ path: String, bearer: Bool) throws(UsageError) {
        let option = TokenFileOption(path: path, bearer: bearer)
        if let given = tokenFile { throw UsageError("\(option.option): a token file is already given with \(given.option)") }
        guard !path.isEmpty else { throw UsageError("\(option.option): the file name is empty") }
        tokenFile = option
    }

    /// The field the token file's token goes in.
    var tokenStyle: TokenHeaderStyle {
        tokenFile?.bearer == true ? .bearer : tokenHeader ?? defaultTokenHeader
    }

    /// Checks the options together, after parsing: each field comes from one place.
    func validate(literalHeaders: [UploadConfiguration.Header]) throws(UsageError) {
        if tokenHeader != nil {
            guard let tokenFile else { throw UsageError("--token-header names the field for --token-file's token: add --token-file FILE") }
            if tokenFile.bearer { throw UsageError("--token-header cannot go with --bearer-token-file (always Authorization: Bearer); use --token-file") }
        }
        var own: [Source] = []
        if user != nil { own.append(Source(field: "Authorization", option: "-u")) }
        if let tokenFile { own.append(Source(field: tokenStyle.name, option: tokenFile.option)) }
        try Self.checkOnce(own, after: literalHeaders.map { Source(literal: $0) })
    }

    /// Where a field comes from, for the message when two places set it.
    ///
    /// Thread safety: a value type.
    private struct Source {
        var field: String
        var option: String
        init(field: String, option: String) {
            self.field = field
            self.option = option
        }
        init(literal header: UploadConfiguration.Header) {
            self.init(field: header.name, option: "-H '\(header.name): …'")
        }
    }

    /// Fails when a field of `own` is also set by `literal` or by an earlier one of `own`.
    private static func checkOnce(_ own: [Source], after literal: [Source]) throws(UsageError) {
        var seen = literal
        for source in own {
            if let earlier = seen.first(where: { $0.field.caseInsensitiveCompare(source.field) == .orderedSame }) {
                throw UsageError("\(source.option) and \(earlier.option) both set \(source.field): give one")
            }
            seen.append(source)
        }
    }

    /// The fields to add to every request, made anew for each (token and header files are read
    /// again), or nil when no credentials were given. Reads every file once now, so a missing
    /// file, an empty token or a missing password is a usage error before anything is sent.
    func headerProvider(
        environment: [String: String], literalHeaders: [UploadConfiguration.Header]
    ) throws(UsageError) -> (@Sendable () throws -> [UploadConfiguration.Header])? {
        var providers: [@Sendable () throws -> [UploadConfiguration.Header]] = []
        var own: [Source] = []
        do {
            if let user {
                let header = try basicCredentials(user, environment: environment).header
                providers.append { [header] }
                own.append(Source(field: header.name, option: "-u"))
            }
            if let tokenFile {
                let file = try TokenFile(path: tokenFile.path, style: tokenStyle)
                providers.append(file.headerProvider())
                own.append(Source(field: tokenStyle.name, option: tokenFile.option))
            }
            for path in headerFiles {
                let file = try HeaderFile(path: path)
                providers.append(file.headerProvider())
                own += try file.headers().map { Source(field: $0.name, option: "-H @\(path)") }
            }
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError("\(error)")
        }
        try Self.checkOnce(own, after: literalHeaders.map { Source(literal: $0) })
        guard !providers.isEmpty else { return nil }
        let all = providers
        return { try all.flatMap { try $0() } }
    }

    /// `-u USER:PASSWORD`, or `-u USER` with the password from ``passwordVariable``.
    private func basicCredentials(_ text: String, environment: [String: String]) throws -> BasicCredentials {
        guard let colon = text.firstIndex(of: ":") else {
            guard let password = environment[Self.passwordVariable] else {
                throw UsageError("-u \(text): no password; give -u \(text):PASSWORD, or set \(Self.passwordVariable) (which keeps it out of ps)")
            }
            return try BasicCredentials(user: text, password: password)
        }
        return try BasicCredentials(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }
}
