import Foundation
import StreamUp

/// A pipelines file (`streamup run FILE`): each line that is not blank and does not start with
/// `#` is one pipeline in streamup's own command words (`tail …`, `heartbeat …`, `journal …`),
/// a `\` at a line's end continues it on the next, and words are split as ``ShellWords`` does
/// (`${NAME}` from the environment, in any quotes).
///
/// A pipeline is known by what it is, never by where it stands: `--name NAME`, or else a name
/// made of its command and what it reads (`tail /var/log/app.log`, `journal nginx.service`,
/// `heartbeat monitor.example`), so adding a comment or moving a line renames nothing. Two lines
/// that would get the same name are refused (one needs a `--name`). Each pipeline needs an
/// http(s) URL: without one a command streams into a throw-away local sink, which a service
/// never wants.
///
/// A file is taken whole or not at all: ``parse(_:environment:)`` throws every ``Problem``, one
/// per bad line.
///
/// Thread safety: a value type.
struct PipelineFile: Equatable {
    /// One pipeline: where it is, its name, its words (without `--name`), its command, and the
    /// values `${NAME}` put into its words.
    ///
    /// Thread safety: a value type.
    struct Pipeline: Equatable {
        var line: Int
        var name: String
        var words: [String]
        var command: Command
        var secrets: [ShellWords.Secret] = []
    }

    /// Why a line cannot be run, naming the line.
    ///
    /// Thread safety: a value type.
    struct Problem: Error, Equatable, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    /// Every problem of a file that cannot be run, in line order.
    ///
    /// Thread safety: a value type.
    struct Refusal: Error, Equatable {
        var problems: [Problem]
    }

    var pipelines: [Pipeline]

    /// The pipelines of `text`, with `${NAME}` from `environment`.
    static func parse(_ text: String, environment: [String: String]) throws(Refusal) -> PipelineFile {
        let (pipelines, problems) = read(text, environment: environment)
        guard problems.isEmpty else { throw Refusal(problems: problems) }
        return PipelineFile(pipelines: pipelines)
    }

    /// The pipelines of the lines of `text` that parse, and the problems of the others (and of
    /// lines that clash), in line order.
    static func read(_ text: String, environment: [String: String]) -> (pipelines: [Pipeline], problems: [Problem]) {
        var pipelines: [Pipeline] = []
        var problems: [Problem] = []
        for (line, logical) in logicalLines(text, problems: &problems) {
            do {
                pipelines.append(try pipeline(logical, line: line, environment: environment))
            } catch {
                problems.append(error)
            }
        }
        problems += conflicts(pipelines)
        return (pipelines, problems.sorted { $0.line < $1.line })
    }

    /// The logical lines of `text` (continued lines joined) with the number of their first line.
    private static func logicalLines(_ text: String, problems: inout [Problem]) -> [(line: Int, text: String)] {
        var logical: [(line: Int, text: String)] = []
        var pending = ""
        var pendingLine = 0
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).enumerated() {
            if pending.isEmpty {
                let trimmed = raw.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                pendingLine = index + 1
            }
            if raw.hasSuffix("\\") && !raw.hasSuffix("\\\\") {
                pending += raw.dropLast() + " "
                continue
            }
            logical.append((pendingLine, pending + raw))
            pending = ""
        }
        if !pending.isEmpty { problems.append(Problem(line: pendingLine, message: "the last line ends with '\\' and nothing continues it")) }
        return logical
    }

    /// Names two lines share, and state files or spools two lines would both write.
    private static func conflicts(_ pipelines: [Pipeline]) -> [Problem] {
        var problems: [Problem] = []
        var names: [String: Pipeline] = [:]
        var files: [String: Int] = [:]
        for pipeline in pipelines {
            if let earlier = names[pipeline.name] {
                let message =
                    earlier.words == pipeline.words
                    ? "the same pipeline as line \(earlier.line)"
                    : "the name '\(pipeline.name)' is line \(earlier.line)'s too: give one of them a --name of its own"
                problems.append(Problem(line: pipeline.line, message: message))
                continue
            }
            names[pipeline.name] = pipeline
            for file in pipeline.ownFiles {
                if let earlier = files[file] {
                    problems.append(Problem(line: pipeline.line, message: "\(file) is line \(earlier)'s too: each pipeline needs its own state and spool"))
                }
                files[file] = pipeline.line
            }
        }
        return problems
    }

    /// The pipeline one logical line gives.
    private static func pipeline(_ text: String, line: Int, environment: [String: String]) throws(Problem) -> Pipeline {
        let split: ShellWords.Split
        do {
            split = try ShellWords.split(text, environment: environment)
        } catch {
            throw Problem(line: line, message: error.message)
        }
        func problem(_ message: String) -> Problem { Problem(line: line, message: ShellWords.hiding(split.secrets, in: message)) }
        var words = split.words
        var name: String?
        if let at = words.firstIndex(of: "--name") {
            guard at + 1 < words.count, !words[at + 1].isEmpty else { throw problem("--name needs a name") }
            name = words[at + 1]
            words.removeSubrange(at...(at + 1))
        }
        guard let first = words.first, ["tail", "heartbeat", "journal"].contains(first) else {
            throw problem("'\(words.first ?? "")' is not tail, heartbeat or journal (stdin has no place in a pipelines file)")
        }
        if let option = words.first(where: { ["--metrics", "--help", "-h", "--version", "-V"].contains($0) }) {
            throw problem("\(option) has no place on a pipeline (--metrics goes on the run command line)")
        }
        var command: Command
        do {
            command = try CommandLineParser.parse(words)
        } catch {
            throw problem(error.message)
        }
        switch command {
        case .heartbeat(let options) where !options.command.isEmpty:
            throw problem("heartbeat -- COMMAND runs a job: it has no place in a pipelines file")
        case .tail(var options):
            options.upload.keepTrying()
            command = .tail(options)
        case .heartbeat(var options):
            options.upload.keepTrying()
            command = .heartbeat(options)
        case .journal(var options):
            options.upload.keepTrying()
            command = .journal(options)
        case .help, .version, .upload, .sink, .run:
            throw problem("'\(words[0])' is not a pipeline")
        }
        var pipeline = Pipeline(line: line, name: name ?? "", words: words, command: command, secrets: split.secrets)
        if let urlProblem = pipeline.urlProblem { throw problem(urlProblem) }
        if name == nil { pipeline.name = pipeline.madeName }
        return pipeline
    }
}

extension PipelineFile.Pipeline {
    /// The options every pipeline's command has.
    var upload: UploadOptions {
        switch command {
        case .tail(let options): options.upload
        case .journal(let options): options.upload
        case .heartbeat(let options): options.upload
        case .help, .version, .upload, .sink, .run: preconditionFailure("a pipeline is tail, journal or heartbeat")
        }
    }

    /// The files only this pipeline may write, as absolute paths (`s1` and `./s1` are one file):
    /// its state file and spool directory.
    var ownFiles: [String] {
        let files: [String?] =
            switch command {
            case .tail(let options): [options.stateFile, options.upload.delivery.spoolDirectory]
            case .journal(let options): [options.stateFile, options.upload.delivery.spoolDirectory]
            case .heartbeat(let options): [options.upload.delivery.spoolDirectory]
            case .help, .version, .upload, .sink, .run: []
            }
        return files.compactMap { $0.map(Self.absolute) }
    }

    /// `path` as one absolute spelling: `.`, `..` and repeated `/` resolved against the working
    /// directory, without following links.
    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// Whether `other` is the same pipeline (same name, same words): a reload leaves it running.
    func isSame(as other: PipelineFile.Pipeline) -> Bool { name == other.name && words == other.words }

    /// How long a stopped pipeline may take to deliver what it holds.
    var shutdownTimeout: Duration { upload.shutdownTimeout ?? UploadOptions.defaultShutdownTimeout }

    /// Why the pipeline's URLs cannot be a service's receiver: none given (a command without
    /// one streams into a throw-away local sink), or one that is not http(s).
    var urlProblem: String? {
        let upload = self.upload
        guard let first = upload.url else {
            return "no URL: a pipeline needs its receiver's http:// or https:// URL (without one it would stream into a throw-away local sink)"
        }
        for url in [first] + upload.moreURLs {
            let scheme = URL(string: url)?.scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else {
                return "\(SecretRedaction.redactingURLs(in: url)) is not an http:// or https:// URL"
            }
        }
        return nil
    }

    /// The name of a pipeline without `--name`: its command and what it reads.
    var madeName: String {
        switch command {
        case .tail(let options):
            return (["tail"] + options.patterns).joined(separator: " ")
        case .journal(let options):
            return (["journal"] + options.units + (options.directory.map { [$0] } ?? [])).joined(separator: " ")
        case .heartbeat(let options):
            let host = options.upload.url.flatMap { URL(string: $0)?.host } ?? ""
            return host.isEmpty ? "heartbeat" : "heartbeat \(host)"
        case .help, .version, .upload, .sink, .run:
            preconditionFailure("a pipeline is tail, journal or heartbeat")
        }
    }
}

extension UploadOptions {
    /// A service's pipeline keeps trying through an outage of any length, unless `--retries`
    /// or `--retry-max-time` say otherwise.
    mutating func keepTrying() {
        guard !delivery.singleRequest, !delivery.segmentOptions.contains("--retries"), !delivery.segmentOptions.contains("--retry-max-time") else {
            return
        }
        delivery.retries = .some(nil)
    }
}
