import StreamUp
import Testing

/// ``SecretRedaction``: what `-v` and every diagnostic line show of credentials.
@Suite struct SecretRedactionTests {
    /// Credential fields are hidden, keeping an Authorization scheme word; other fields show.
    @Test(arguments: [
        ("Authorization", "Bearer eyJhbGciOi.abc.def", "Bearer <redacted>"),
        ("authorization", "Basic YWxpY2U6czNjcmV0", "Basic <redacted>"),
        ("Authorization", "Splunk 3f1c-hec-token", "Splunk <redacted>"),
        ("Authorization", "raw-token-without-scheme", "<redacted>"),
        ("Proxy-Authorization", "Basic cHJveHk6cHc=", "Basic <redacted>"),
        ("Cookie", "session=abc; theme=dark", "<redacted>"),
        ("Set-Cookie", "session=abc; HttpOnly", "<redacted>"),
        ("DD-API-KEY", "0123456789abcdef", "<redacted>"),
        ("X-API-Key", "k", "<redacted>"),
        ("Api-Key", "k", "<redacted>"),
        ("X-Splunk-Request-Channel", "FE0ECFAD-13D5-401B-847D-77833BD77131", "<redacted>"),
        ("X-SF-Token", "t", "<redacted>"),
        ("X-Auth-Token", "t", "<redacted>"),
        ("Ocp-Apim-Subscription-Key", "k", "<redacted>"),
        ("X-Honeycomb-Team", "k", "<redacted>"),
        ("Private-Token", "glpat-x", "<redacted>"),
        ("Content-Type", "application/x-ndjson", "application/x-ndjson"),
        ("User-Agent", "streamup/0.1.0", "streamup/0.1.0"),
        ("Streamup-Offset", "42", "42"),
        ("Upload-Offset", "42", "42"),
        ("Expect", "", ""),
    ])
    func fieldValueIsShownOrHidden(name: String, value: String, shown: String) {
        #expect(SecretRedaction.value(ofField: name, value) == shown)
    }

    /// URLs anywhere in a line lose their user information and secret query values; the rest
    /// of the line, and URLs without secrets, are unchanged.
    @Test(arguments: [
        ("> POST https://alice:s3cret@logs.example/ingest", "> POST https://<redacted>@logs.example/ingest"),
        ("> POST https://TOKEN@logs.example/", "> POST https://<redacted>@logs.example/"),
        ("'http://u:p@127.0.0.1:99999/' is not a URL", "'http://<redacted>@127.0.0.1:99999/' is not a URL"),
        ("http://u:p@[::1]:8080/x and ftp://v:q@h", "http://<redacted>@[::1]:8080/x and ftp://<redacted>@h"),
        ("http://user:p@ss@h.example/", "http://<redacted>@h.example/"),
        ("http://u:p@h.example", "http://<redacted>@h.example"),
        ("https://h.example/api/v2/logs?dd-api-key=abc&service=web#top", "https://h.example/api/v2/logs?dd-api-key=<redacted>&service=web#top"),
        ("https://h.example/x?access_token=abc&token=def&sig=ghi&page=2", "https://h.example/x?access_token=<redacted>&token=<redacted>&sig=<redacted>&page=2"),
        ("https://h.example/x?api%5Fkey=abc", "https://h.example/x?api%5Fkey=<redacted>"),
        ("Location: https://h.example/a@b?x=1", "Location: https://h.example/a@b?x=1"),
        ("no URL here: a@b, c://", "no URL here: a@b, c://"),
        ("https://h.example/ingest", "https://h.example/ingest"),
        ("", ""),
    ])
    func urlsInTextLoseTheirSecrets(text: String, shown: String) {
        #expect(SecretRedaction.redactingURLs(in: text) == shown)
    }
}
