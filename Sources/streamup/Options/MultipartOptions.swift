import StreamUp

/// `--multipart FIELD[=FILENAME]` and `--form NAME=VALUE`: each request's body becomes the file
/// part of a `multipart/form-data` form, after the text fields (``MultipartForm``).
///
/// Thread safety: a value type.
struct MultipartOptions: Sendable, Equatable {
    /// The file part's field name; nil: no form.
    var field: String?
    var filename: String?
    var textFields: [MultipartForm.TextField] = []

    /// The file name when `--multipart` gives none.
    static let defaultFilename = "stream"

    static let table: [OptionSpec<MultipartOptions>] = [
        .value(
            "--multipart", valueName: "FIELD[=FILENAME]",
            group: .records, help: "send each request as a multipart/form-data form, records in FIELD"
        ) { options, value throws(UsageError) in
            guard options.field == nil else { throw UsageError("--multipart: given twice") }
            let parts = value.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let field = parts.first, !field.isEmpty else { throw UsageError("--multipart: '\(value)' has no field name (FIELD[=FILENAME])") }
            if parts.count == 2, parts[1].isEmpty { throw UsageError("--multipart: '\(value)' has an empty file name (FIELD[=FILENAME])") }
            options.field = field
            options.filename = parts.count == 2 ? parts[1] : nil
        },
        .value("--form", valueName: "NAME=VALUE", group: .records, help: "add a text field to the --multipart form (repeatable)") {
            options, value throws(UsageError) in
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex else {
                throw UsageError("--form: '\(value)' is not NAME=VALUE")
            }
            options.textFields.append(.init(name: String(value[..<equals]), value: String(value[value.index(after: equals)...])))
        },
    ]

    /// Checks the options together, after parsing.
    func validate(resumable: Bool, headers: [UploadConfiguration.Header]) throws(UsageError) {
        guard field != nil else {
            if !textFields.isEmpty { throw UsageError("--form adds a field to a multipart form: add --multipart FIELD") }
            return
        }
        if resumable {
            throw UsageError("--multipart cannot go with --resumable: the upload's parts would not add up to one form")
        }
        if headers.contains(where: { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }) {
            throw UsageError("--multipart sets the request's Content-Type (multipart/form-data); --content-type sets the file part's")
        }
    }

    /// Makes each request of `configuration` this form, around the envelope it already has; the
    /// file part takes the configuration's content type.
    func apply(to configuration: inout UploadConfiguration) throws(UsageError) {
        guard let field else { return }
        do {
            let form = try MultipartForm(
                fileField: field, filename: filename ?? Self.defaultFilename, fileContentType: configuration.contentType,
                textFields: textFields)
            configuration.body.envelope = form.envelope(around: configuration.body.envelope)
            configuration.contentType = form.contentType
        } catch {
            throw UsageError("--multipart: \(error)")
        }
    }
}
