import Foundation

/// Where a resumable upload lives, and the stream offset of its first byte, so that a restarted
/// streamup can go on appending to it (kept in the spool's record).
///
/// Thread safety: a value type.
package struct ResumableUploadReference: Codable, Sendable, Equatable {
    /// The upload URL the server gave in `Location`.
    package var url: String
    /// The stream offset of the upload's byte 0.
    package var base: Int
    /// The target the upload was created at; a run with another target starts a new upload.
    package var target: String?

    package init(url: String, base: Int, target: String?) {
        self.url = url
        self.base = base
        self.target = target
    }
}

/// The header fields of the IETF resumable-upload protocol (draft-ietf-httpbis-resumable-upload)
/// that streamup speaks, in one place so that moving to a newer interop version is a small change.
///
/// Thread safety: constants and pure functions.
enum ResumableFields {
    /// Interop version 6 (drafts -04/-05), as Apple's NIOResumableUpload speaks it.
    static let interopVersion = "6"
    static let version = "Upload-Draft-Interop-Version"
    static let complete = "Upload-Complete"
    static let offset = "Upload-Offset"
    /// The content type every PATCH body must have in version 6.
    static let patchContentType = "application/partial-upload"

    /// An RFC 9651 Boolean: `?1` or `?0`; anything else counts as absent.
    static func boolean(_ value: String?) -> Bool? {
        switch value?.trimmingCharacters(in: .whitespaces) {
        case "?1": true
        case "?0": false
        default: nil
        }
    }

    /// `Upload-Offset` of an answer, if it is a valid non-negative RFC 9651 Integer.
    static func offset(of response: UploadResponse) -> Int? {
        guard let text = response.value(forHeader: offset)?.trimmingCharacters(in: .whitespaces),
              !text.isEmpty, text.count <= 15, text.allSatisfy(\.isASCII), let value = Int(text), value >= 0
        else { return nil }
        return value
    }

    /// Whether an answer says the upload is still incomplete: `Upload-Complete: ?0`, or the
    /// older `Upload-Incomplete: ?1` (servers send either after completion).
    static func saysIncomplete(_ response: UploadResponse) -> Bool {
        boolean(response.value(forHeader: complete)) == false || boolean(response.value(forHeader: "Upload-Incomplete")) == true
    }
}
