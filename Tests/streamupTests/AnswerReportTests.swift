import Foundation
import Testing

@testable import streamup

/// ``AnswerReport``: an answer that is not 2xx as one line on stderr, a 2xx body as the result.
@Suite struct AnswerReportTests {
    private func line(_ status: Int, _ headers: [String: String] = [:], _ body: String = "", url: String = "http://logs.example/in") -> String {
        AnswerReport.failureLine(status: status, headers: headers, body: Array(body.utf8), requestURL: URL(string: url))
    }

    /// nginx's 502 page (seven lines of HTML) reads as its words on one line.
    @Test func htmlErrorPageBecomesItsWordsOnOneLine() {
        let page = """
            <html>
            <head><title>502 Bad Gateway</title></head>
            <body>
            <center><h1>502 Bad Gateway</h1></center>
            <hr><center>nginx/1.22.1</center>
            </body>
            </html>

            """
        #expect(line(502, ["content-type": "text/html"], page) == "server answered 502 Bad Gateway: 502 Bad Gateway nginx/1.22.1")
    }

    /// nginx with `ssl_verify_client on` refuses a request for its client certificate with a
    /// 400 page after the handshake: the line says what to give, or what to check.
    @Test func nginxClientCertificatePagesSayWhatToDo() {
        func page(_ words: String) -> String {
            "<html>\n<head><title>400 \(words)</title></head>\n<body>\n<center><h1>400 Bad Request</h1></center>\n<center>\(words)</center>\n<hr><center>nginx/1.22.1</center>\n</body>\n</html>\n"
        }
        #expect(
            line(400, ["content-type": "text/html"], page("No required SSL certificate was sent")).hasSuffix(
                "nginx/1.22.1; the server wants a client certificate: give it with --cert FILE and its key with --key FILE (PEM)"))
        #expect(
            line(400, ["content-type": "text/html"], page("The SSL certificate error")).hasSuffix(
                "nginx/1.22.1; the server refused the client certificate (--cert): check that a CA it trusts issued it and that it is in date and not revoked"))
        #expect(!line(400, ["content-type": "text/html"], page("Bad Request")).contains("certificate"))
    }

    /// Scripts, styles and comments are not words; entities are decoded; a body that is not
    /// HTML keeps its angle brackets.
    @Test func htmlMarkupIsLeftOutAndEntitiesDecoded() {
        let page =
            "<!DOCTYPE html><html><head><style>p{color:red}</style></head><body><!-- id 7 --><script>var x = 1 < 2;</script><p>Quota &amp; limits: &lt;10 MB&gt; &#39;per&#x27; day&nbsp;!</p></body></html>"
        #expect(line(413, ["Content-Type": "text/html; charset=utf-8"], page) == "server answered 413 Payload Too Large: Quota & limits: <10 MB> 'per' day !")
        #expect(line(400, ["Content-Type": "application/json"], "{\"error\": \"a < b\"}") == "server answered 400 Bad Request: {\"error\": \"a < b\"}")
    }

    /// Line breaks, tabs and runs of spaces become one space; control characters (an escape
    /// sequence meant for a terminal) do not reach stderr.
    @Test func whitespaceAndControlsCollapse() {
        #expect(line(500, [:], "\n\n  disk\tfull\r\n  on /var \u{1B}[31m\n") == "server answered 500 Internal Server Error: disk full on /var [31m")
        #expect(!line(500, [:], "a\u{0}b\u{7F}c\u{1B}d").unicodeScalars.contains { $0.properties.generalCategory == .control })
    }

    /// A long body is cut at a word near the limit, and the marker counts the body's bytes
    /// left out, up to its declared length when more was declared than kept.
    @Test func longBodyIsCutAtAWordWithTheBytesLeftOut() {
        let sentence = "error: disk quota exceeded for tenant acme; "  // 44 bytes
        let body = String(repeating: sentence, count: 40)  // 1,760 bytes
        let text = line(507, ["Content-Type": "text/plain"], body)
        #expect(
            text == "server answered 507 Insufficient Storage: " + String(repeating: sentence, count: 6) + "error: disk quota exceeded for … (1466 more bytes)")
        let declared = line(507, ["Content-Length": "100000"], body)
        #expect(declared.hasSuffix("exceeded for … (99706 more bytes)"))
        let oneWord = AnswerReport.oneLine(Array(String(repeating: "x", count: 400).utf8), isHTML: false, totalBytes: 400, limit: 300)
        #expect(oneWord == String(repeating: "x", count: 300) + " … (100 more bytes)")
    }

    /// A redirect's Location is always on the line, made absolute against the request URL.
    @Test func redirectNamesItsTarget() {
        #expect(
            line(301, ["location": "https://logs.example/v2/in"])
                == "server answered 301 Moved Permanently: Location https://logs.example/v2/in; a streamed body cannot follow redirects, use that URL")
        #expect(
            line(307, ["Location": "/v2/in"], "moved", url: "http://[::1]:8080/in")
                == "server answered 307 Temporary Redirect: Location http://[::1]:8080/v2/in; a streamed body cannot follow redirects, use that URL")
        #expect(line(304) == "server answered 304 Not Modified")
    }

    /// An empty error body leaves the status alone on the line.
    @Test func emptyBodyLeavesTheStatus() {
        #expect(line(503, ["Content-Type": "text/html"], " \n<html></html>\n") == "server answered 503 Service Unavailable")
    }

    /// A 2xx body is printed as it came, ending with a line break; an empty one prints nothing.
    @Test func successBodyIsPrintedWithAFinalLineBreak() {
        #expect(AnswerReport.printable(Array("{\"ok\":true}".utf8)) == Array("{\"ok\":true}\n".utf8))
        #expect(AnswerReport.printable(Array("done\n".utf8)) == Array("done\n".utf8))
        #expect(AnswerReport.printable([]) == nil)
    }
}
