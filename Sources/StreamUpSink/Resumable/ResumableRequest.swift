import StreamUpHTTP

/// A request of the IETF resumable-upload protocol (draft-ietf-httpbis-resumable-upload,
/// interop versions 6 and 8), recognised from its head alone.
///
/// A request is part of the protocol only when it carries `Upload-Draft-Interop-Version`:
/// - `POST` (any path but an upload's) with a parsable `Upload-Complete` creates an upload;
/// - `PATCH`, `HEAD`, `DELETE` on an upload URL (`/uploads/TOKEN`) append, retrieve the offset
///   and cancel; any other method there is refused with `405`.
/// Everything else, with or without the header, is an ordinary request.
///
/// Thread safety: a value type that is never shared mutably.
struct ResumableRequest: Hashable {
    enum Kind: Hashable {
        /// `POST` with `Upload-Complete`; `complete` when the whole upload is in this request.
        case create(complete: Bool)
        /// `PATCH` at `offset`; `complete` when this request ends the upload (the default when
        /// `Upload-Complete` is absent, as in NIOResumableUpload).
        case append(token: String, offset: Int, complete: Bool)
        /// `HEAD`.
        case retrieveOffset(token: String)
        /// `DELETE`.
        case cancel(token: String)
        /// Another method on an upload URL.
        case methodNotAllowed
    }

    /// A protocol request that is malformed: answered `400` with the field that is wrong.
    struct Invalid: Error, Hashable {
        let reason: String
    }

    /// The interop versions accepted; responses echo the request's.
    static let supportedVersions: Set<Int> = [6, 8]
    /// The version sent when the request's is unusable.
    static let defaultVersion = ResumableUploadFields.interopVersion
    /// Upload URLs are `/uploads/TOKEN`.
    static let pathPrefix = "/uploads/"
    private typealias Fields = ResumableUploadFields

    var kind: Kind
    var version: Int

    /// The protocol request `head` is, `nil` for an ordinary request.
    ///
    /// - Throws: ``Invalid`` for an unsupported version, a `PATCH` without a usable
    ///   `Upload-Offset` or with another `Content-Type` than `application/partial-upload`, a
    ///   creation whose `Upload-Offset` is not 0, and a `HEAD`/`DELETE` carrying upload fields.
    static func identify(_ head: HTTPRequestHead) throws(Invalid) -> ResumableRequest? {
        let fields = head.headers
        guard fields.first(named: Fields.version) != nil else { return nil }
        guard let version = fields.single(named: Fields.version).flatMap(StructuredFieldItem.integer),
            supportedVersions.contains(version)
        else {
            throw Invalid(reason: "unsupported \(Fields.version) (this sink speaks \(supportedVersions.sorted()))")
        }
        let complete = fields.single(named: Fields.complete).flatMap(StructuredFieldItem.boolean)
        let offset = fields.single(named: Fields.offset).flatMap(StructuredFieldItem.integer)
        let hasOffsetField = fields.first(named: Fields.offset) != nil
        let hasUploadFields = fields.first(named: Fields.complete) != nil || hasOffsetField
        guard let token = uploadToken(inTarget: head.target) else {
            guard head.method == "POST", let complete else { return nil }
            if hasOffsetField && offset != 0 {
                throw Invalid(reason: "\(Fields.offset) of an upload creation must be 0")
            }
            return ResumableRequest(kind: .create(complete: complete), version: version)
        }
        switch head.method {
        case "PATCH":
            guard let offset, offset >= 0 else {
                throw Invalid(reason: "PATCH needs \(Fields.offset): a non-negative integer")
            }
            guard mediaType(fields.first(named: "content-type")) == Fields.partialUploadType else {
                throw Invalid(reason: "PATCH needs Content-Type: \(Fields.partialUploadType)")
            }
            return ResumableRequest(kind: .append(token: token, offset: offset, complete: complete ?? true), version: version)
        case "HEAD", "DELETE":
            guard !hasUploadFields else {
                throw Invalid(reason: "\(head.method) must not carry \(Fields.complete) or \(Fields.offset)")
            }
            let kind: Kind = head.method == "HEAD" ? .retrieveOffset(token: token) : .cancel(token: token)
            return ResumableRequest(kind: kind, version: version)
        default:
            return ResumableRequest(kind: .methodNotAllowed, version: version)
        }
    }

    /// The token of an upload URL's path (`/uploads/TOKEN`, no query), or `nil`.
    static func uploadToken(inTarget target: String) -> String? {
        guard target.hasPrefix(pathPrefix) else { return nil }
        let token = target.dropFirst(pathPrefix.count)
        guard !token.isEmpty, token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return String(token)
    }

    /// `type/subtype` of a `Content-Type` value, lower-cased, without parameters.
    private static func mediaType(_ value: String?) -> String? {
        guard let value else { return nil }
        return value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first?
            .trimmingWhitespace().lowercased()
    }
}
