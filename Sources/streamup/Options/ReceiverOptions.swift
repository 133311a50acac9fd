import Foundation
import StreamUp

/// `--to NAME` and `--label KEY=VALUE`: a ``Receiver`` preset sets the request (path hint,
/// method, content type, envelope, token header), the records (format, shape, keys) and the
/// delivery limits; every option given explicitly wins over the preset's value.
extension UploadOptions {
    static let receiverTable: [OptionSpec<UploadOptions>] = [
        .value(
            "--to", valueName: "RECEIVER",
            group: .receivers,
            help: "speak a receiver's API: \(Receiver.names.joined(separator: ", ")) (streamup help receivers)"
        ) { options, value throws(UsageError) in
            guard let receiver = Receiver(named: value) else {
                throw UsageError("--to: '\(value)' is not a receiver streamup knows (\(Receiver.names.joined(separator: ", ")))")
            }
            options.records.receiver = receiver
        },
        .value(
            "--label", valueName: "KEY=VALUE",
            group: .receivers, help: "Loki label, VictoriaLogs stream field, OTLP attribute (repeatable)"
        ) { options, value throws(UsageError) in
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex else { throw UsageError("--label: '\(value)' is not KEY=VALUE") }
            options.records.labels.append((String(value[..<equals]), String(value[value.index(after: equals)...])))
        },
    ]

    /// What cannot go with the receiver (or with its absence).
    func validateReceiver() throws(UsageError) {
        guard let receiver = records.receiver else {
            if !records.labels.isEmpty { throw UsageError("--label needs --to loki, victorialogs or otlp (their labels, stream fields, resource attributes)") }
            return
        }
        let name = receiver.rawValue
        if !records.labels.isEmpty, receiver.labelMeaning == nil {
            throw UsageError("--label: \(name) has no labels (--to loki, victorialogs or otlp do); use --field for fields on every record")
        }
        if !receiver.shape.usesKeys, let key = records.given.intersection(["--message-key", "--time-key"]).sorted().first {
            throw UsageError("\(key) cannot go with --to \(name): its records use the receiver's own names")
        }
        if delivery.singleRequest, !receiver.takesSingleRequest {
            throw UsageError(
                "--single-request cannot go with --to \(name): it reads each request whole before storing any of it, so it needs segments (the default)")
        }
        if delivery.resumable {
            throw UsageError("--resumable cannot go with --to \(name): it does not speak the IETF resumable-upload protocol")
        }
    }

    /// The request configuration for `urlText`: the receiver's (path hint, method, content
    /// type, envelope), then the options given explicitly.
    /// - Throws: ``StreamUpError`` for a URL that cannot work or a label the receiver refuses.
    func configuration(url urlText: String) throws -> UploadConfiguration {
        let url = try UploadConfiguration.url(from: urlText)
        guard let receiver = records.receiver else {
            var configuration = UploadConfiguration(url: url)
            configuration.method = method
            configuration.contentType = contentType
            if records.format != .raw && !given.contains("--content-type") && contentType == UploadOptions().contentType {
                configuration.contentType = "application/x-ndjson"
            }
            return configuration
        }
        var configuration = try receiver.configuration(url: url, keys: records.effectiveKeys, labels: records.labels.map { (name: $0.0, value: $0.1) })
        if given.contains("--method") { configuration.method = method }
        if given.contains("--content-type") { configuration.contentType = contentType }
        return configuration
    }

    /// The library's delivery options: the receiver's limits and answer reader, then the
    /// options given explicitly.
    var libraryOptions: StreamUploader.Options {
        var options = delivery.libraryOptions(base: records.receiver.map { $0.deliveryOptions() } ?? StreamUploader.Options())
        options.maxRecordBytes = maxRecordBytes
        options.maxInFlight = maxInFlight
        return options
    }

    /// The most requests out at once (the window adapts up to it): `--max-in-flight`, else the
    /// receiver's (``Receiver/maxInFlight``: 8 where records carry their own time), else one, so
    /// that a plain URL gets records in the order they were read. A PUT writes one resource in
    /// order, `--resumable` one upload, `--single-request` one request, and `--dead-letter`'s
    /// offsets leave out what it sets aside: one (an explicit window with them is refused).
    var maxInFlight: Int {
        if method.uppercased() == "PUT" || delivery.resumable || delivery.singleRequest || delivery.deadLetterDirectory != nil { return 1 }
        return delivery.maxInFlight ?? records.receiver?.maxInFlight ?? 1
    }

    /// The header a token goes in (`Authorization: Bearer`, or the receiver's: Splunk's
    /// `Authorization: Splunk`, Datadog's `DD-API-KEY`), for options that supply a token.
    var tokenHeader: TokenHeaderStyle { records.receiver?.tokenHeader ?? .bearer }

    /// The credential options with the receiver's token header as the default for
    /// `--token-file` (`--token-header` and `--bearer-token-file` still win).
    var effectiveAuth: AuthOptions {
        var effective = auth
        effective.defaultTokenHeader = tokenHeader
        return effective
    }
}
