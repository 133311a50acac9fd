import Foundation

/// A pipelines file (`streamup run FILE`): each line that is not blank and does not start with
/// `#` is one pipeline in streamup's own command words (`tail …`, `heartbeat …`, `journal …`),
/// a `\` at a line's end continues it on the next, words are split as a shell does (spaces;
/// 'single' and "double" quotes; `\` escapes) and `${NAME}` is taken from the environment
/// (outside single quotes). `--name NAME` names a pipeline (default: its line number).
///
/// A file is taken whole or not at all: ``parse(_:environment:)`` throws one
/// ``Problem`` naming the line.
///
/// Thread safety: a value type.
struct PipelineFile: Equatable {
    /// One pipeline: where it is, its name, its command and the words it was made from (what
    /// tells a reload whether it changed).
    struct Pipeline: Equatable {
        var line: Int
        var name: String
        var words: [String]
        var command: Command
    }

    /// Why a file cannot be run, naming its line.
    struct Problem: Error, Equatable, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    var pipelines: [Pipeline]

    /// The pipelines of `text`, with `${NAME}` from `environment`.
    static func parse(_ text: String, environment: [String: String]) throws(Problem) -> PipelineFile {
        var pipelines: [Pipeline] = []
        var pending = ""
        var pendingLine = 0
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            if pending.isEmpty {
                let trimmed = raw.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                pendingLine = number
            }
            if raw.hasSuffix("\\") && !raw.hasSuffix("\\\\") {
                pending += raw.dropLast() + " "
                continue
            }
            pending += raw
            let logical = pending
            pending = ""
            pipelines.append(try pipeline(logical, line: pendingLine, environment: environment))
        }
        if !pending.isEmpty { throw Problem(line: pendingLine, message: "the last line ends with '\\' and nothing continues it") }
        var names: [String: Int] = [:]
        var files: [String: Int] = [:]
        for pipeline in pipelines {
            if let earlier = names[pipeline.name] {
                throw Problem(line: pipeline.line, message: "the name '\(pipeline.name)' is taken by line \(earlier) (--name)")
            }
            names[pipeline.name] = pipeline.line
            for file in pipeline.ownFiles {
                if let earlier = files[file] {
                    throw Problem(line: pipeline.line, message: "\(file) is line \(earlier)'s too: each pipeline needs its own state and spool")
                }
                files[file] = pipeline.line
            }
        }
        return PipelineFile(pipelines: pipelines)
    }

    /// The pipeline one logical line gives.
    private static func pipeline(_ text: String, line: Int, environment: [String: String]) throws(Problem) -> Pipeline {
        var words: [String]
        do {
            words = try ShellWords.split(text, environment: environment)
        } catch {
            throw Problem(line: line, message: error.message)
        }
        var name = "\(line)"
        if let at = words.firstIndex(of: "--name") {
            guard at + 1 < words.count, !words[at + 1].isEmpty else { throw Problem(line: line, message: "--name needs a name") }
            name = words[at + 1]
            words.removeSubrange(at...(at + 1))
        }
        guard let first = words.first, ["tail", "heartbeat", "journal"].contains(first) else {
            throw Problem(line: line, message: "'\(words.first ?? "")' is not tail, heartbeat or journal (stdin has no place in a pipelines file)")
        }
        if let option = words.first(where: { ["--metrics", "--help", "-h", "--version", "-V"].contains($0) }) {
            throw Problem(line: line, message: "\(option) has no place on a pipeline (--metrics goes on the run command line)")
        }
        var command: Command
        do {
            command = try CommandLineParser.parse(words)
        } catch {
            throw Problem(line: line, message: error.message)
        }
        switch command {
        case .heartbeat(let options) where !options.command.isEmpty:
            throw Problem(line: line, message: "heartbeat -- COMMAND runs a job: it has no place in a pipelines file")
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
            throw Problem(line: line, message: "'\(words[0])' is not a pipeline")
        }
        return Pipeline(line: line, name: name, words: words, command: command)
    }
}

extension PipelineFile.Pipeline {
    /// The files only this pipeline may write: its state file and spool directory.
    var ownFiles: [String] {
        switch command {
        case .tail(let options): [options.stateFile, options.upload.delivery.spoolDirectory].compactMap { $0 }
        case .journal(let options): [options.stateFile, options.upload.delivery.spoolDirectory].compactMap { $0 }
        case .heartbeat(let options): [options.upload.delivery.spoolDirectory].compactMap { $0 }
        case .help, .version, .upload, .sink, .run: []
        }
    }

    /// Whether `other` is the same pipeline (same name, same words): a reload leaves it running.
    func isSame(as other: PipelineFile.Pipeline) -> Bool { name == other.name && words == other.words }
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
