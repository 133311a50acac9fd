import Foundation

/// Requests of the resumable-upload protocol as raw HTTP/1.1 text, and the reading of their
/// answers (interim `104`/`100` responses first), for ``TestClient``.
enum Resumable {
    /// A head with `Host: sink` (unless `host` is nil) and the given header lines.
    static func head(method: String, path: String, host: String? = "sink", _ headers: [String]) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\n"
        if let host {
            text += "Host: \(host)\r\n"
        }
        return text + headers.map { $0 + "\r\n" }.joined() + "\r\n"
    }

    /// `POST` creating an upload with a `length`-byte body.
    static func create(
        complete: Bool, length: Int, version: String = "6", host: String? = "sink", extra: [String] = []
    ) -> String {
        head(
            method: "POST", path: "/upload", host: host,
            [
                "Upload-Draft-Interop-Version: \(version)", "Upload-Complete: \(complete ? "?1" : "?0")",
                "Content-Length: \(length)",
            ] + extra)
    }

    /// `PATCH` appending a `length`-byte body at `offset`.
    static func append(
        _ path: String, offset: Int, complete: Bool, length: Int,
        contentType: String = "application/partial-upload", extra: [String] = []
    ) -> String {
        head(
            method: "PATCH", path: path,
            [
                "Upload-Draft-Interop-Version: 6", "Upload-Offset: \(offset)",
                "Upload-Complete: \(complete ? "?1" : "?0")", "Content-Type: \(contentType)",
                "Content-Length: \(length)",
            ] + extra)
    }

    /// `HEAD` retrieving the offset.
    static func retrieveOffset(_ path: String) -> String {
        head(method: "HEAD", path: path, ["Upload-Draft-Interop-Version: 6"])
    }

    /// `DELETE` cancelling the upload.
    static func cancel(_ path: String) -> String {
        head(method: "DELETE", path: path, ["Upload-Draft-Interop-Version: 6"])
    }

    /// The path of an absolute upload URL.
    static func path(of location: String?) throws -> String {
        guard let location, let url = URL(string: location), !url.path.isEmpty else {
            throw TestClientError(description: "not an upload URL: \(location ?? "nil")")
        }
        return url.path
    }
}

extension TestClient {
    /// Reads interim (`1xx`) responses until a final one; returns both.
    func readFinalResponse() throws -> (interim: [TestResponse], final: TestResponse) {
        var interim: [TestResponse] = []
        while true {
            let response = try readResponse()
            guard (100...199).contains(response.status) else { return (interim, response) }
            interim.append(response)
        }
    }

    /// Creates an upload with `body` (not completing it) and returns its path; expects `201`.
    func createUpload(_ body: [UInt8] = [], extra: [String] = []) throws -> String {
        try send(Array(Resumable.create(complete: false, length: body.count, extra: extra).utf8) + body)
        let answer = try readFinalResponse()
        guard answer.final.status == 201 else {
            throw TestClientError(description: "creation answered \(answer.final.status): \(answer.final.bodyText)")
        }
        return try Resumable.path(of: answer.final.headers["location"])
    }

    /// Sends a `HEAD` for `path` and returns the answer.
    func retrieveOffset(_ path: String) throws -> TestResponse {
        try send(Resumable.retrieveOffset(path))
        return try readResponse()
    }
}
