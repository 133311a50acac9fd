import StreamUpHTTP

// What an answer says about a resumable upload (draft-ietf-httpbis-resumable-upload).
extension UploadResponse {
    /// `Upload-Offset`, when it is a non-negative RFC 9651 Integer.
    var uploadOffset: Int? {
        guard let value = value(forHeader: ResumableUploadFields.offset).flatMap(StructuredFieldItem.integer),
            value >= 0
        else { return nil }
        return value
    }

    /// `Upload-Complete`, when it is an RFC 9651 Boolean.
    var uploadComplete: Bool? {
        value(forHeader: ResumableUploadFields.complete).flatMap(StructuredFieldItem.boolean)
    }
}
