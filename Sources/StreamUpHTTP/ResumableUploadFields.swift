/// The header fields and media type of the IETF resumable-upload protocol
/// (draft-ietf-httpbis-resumable-upload), in one place for the client and the sink, so that
/// moving to a newer interop version is a small change. Their values are RFC 9651 items: read
/// them with ``StructuredFieldItem``.
///
/// Thread safety: constants; callable from any thread.
package enum ResumableUploadFields {
    /// Interop version 6 (drafts -04/-05), as Apple's NIOResumableUpload speaks it: what the
    /// client sends, and what the sink answers when a request's version is unusable.
    package static let interopVersion = 6
    /// `Upload-Draft-Interop-Version`: an Integer.
    package static let version = "Upload-Draft-Interop-Version"
    /// `Upload-Complete`: a Boolean, `?1` when the request carries the upload's last byte.
    package static let complete = "Upload-Complete"
    /// `Upload-Offset`: an Integer, the bytes the server holds or the request starts at.
    package static let offset = "Upload-Offset"
    /// The content type every `PATCH` body must have in version 6.
    package static let partialUploadType = "application/partial-upload"
}
