import CStreamUpCurl
import Foundation
import StreamUp
import StreamUpSink
import StreamUpTestSupport
import Testing

extension InProcessUploads {
    @Suite(.timeLimit(.minutes(1))) struct URLHandleReleaseTests {
        /// Every request leaves nothing of its URL behind in libcurl: FoundationNetworking (Swift
        /// 6.3) checks each request's host with a libcurl URL handle it releases with `curl_free`,
        /// which left the URL's parts allocated, about 150 bytes a request, also in a bare
        /// URLSession program (an agent sending twenty requests a second lost gigabytes a month).
        /// The hook in CStreamUpCurl sees each handle made and released whole.
        @Test func everyRequestsURLHandleIsReleasedWhole() async throws {
            try await SinkServer.withRunning(SinkConfiguration()) { sink in
                // Earlier tests may have left handles behind that no hook can release (corelibs
                // never releases one whose URL libcurl refused to parse): count from here.
                let before = streamup_curl_url_handles_made()
                let heldBefore = streamup_curl_url_handles_held()
                var options = StreamUploader.Options()
                options.segmentBytes = 64
                let uploader = try StreamUploader(UploadConfiguration(url: sink.url.appendingPathComponent("handles")), options: options)
                let lines = (0..<50).map { Array("line \($0) of about forty bytes, give or take\n".utf8) }
                let response = try await uploader.run(ChunksProducer(chunks: lines))
                #expect(response.isSuccess)
                // Given: each line went as a request of its own (64-byte segments).
                try #require(sink.requests.count >= 50, "\(sink.requests.count) requests")
                // Then: each request's URL went through the hook, and none is held any more.
                #expect(streamup_curl_url_handles_made() - before >= 50)
                // (Polled: a request of another test running beside this one holds a handle
                // for the microseconds of its host check; a handle never released stays.)
                #expect(await eventually { streamup_curl_url_handles_held() <= heldBefore })
            }
        }
    }
}
