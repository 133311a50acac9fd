import Foundation
import StreamUpSink
import StreamUpTestSupport
import Testing

@testable import StreamUp

extension InProcessUploads {
    /// A multipart upload whose records hold the boundary (possible here only because the test
    /// chooses the boundary; streamup draws 190 random bits): the request is cut off before the
    /// boundary goes out, so the receiver never gets a closed but broken form, and delivery
    /// stops at once instead of retrying what would fail the same way.
    @Suite struct MultipartUploadTests {
        @Test func boundaryInTheRecordsStopsTheUpload() async throws {
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let form = try MultipartForm(fileField: "file", filename: "f.log", boundary: "streamup-fixed")
                var configuration = UploadConfiguration(url: sink.url)
                configuration.body.envelope = form.envelope()
                configuration.contentType = form.contentType
                let uploader = try StreamUploader(configuration, options: StreamUploader.Options())
                let (lines, continuation) = AsyncStream<[UInt8]>.makeStream()
                continuation.yield(Array("fine\n".utf8))
                continuation.yield(Array("--streamup-fixed--\n".utf8))
                continuation.finish()
                let error = await #expect(throws: StreamUpError.self) {
                    try await uploader.run(AsyncSequenceProducer(lines))
                }
                #expect(error?.description.hasPrefix("a record contains the multipart boundary") == true, "\(String(describing: error))")
                #expect(uploader.progress.retries == 0)
                #expect(sink.requests.filter(\.isComplete).isEmpty, "no complete body reached the sink")
            }
        }

        /// With dead letters, such a segment is set aside, records intact, without a retry.
        @Test func boundaryInTheRecordsIsADeadLetter() async throws {
            let directory = try TemporaryDirectory()
            try await SinkServer.withRunning(SinkConfiguration(keepBodiesInMemory: true)) { sink in
                let form = try MultipartForm(fileField: "file", filename: "f.log", boundary: "streamup-fixed")
                var configuration = UploadConfiguration(url: sink.url)
                configuration.body.envelope = form.envelope()
                configuration.contentType = form.contentType
                var options = StreamUploader.Options()
                options.deadLetterDirectory = directory.url
                let uploader = try StreamUploader(configuration, options: options)
                let (lines, continuation) = AsyncStream<[UInt8]>.makeStream()
                continuation.yield(Array("fine\n--streamup-fixed--\n".utf8))
                continuation.finish()
                _ = try? await uploader.run(AsyncSequenceProducer(lines))
                #expect(uploader.progress.deadLetters == 1 && uploader.progress.retries == 0)
                let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".body") }
                #expect(files.count == 1)
                let kept = try files.first.map { try String(contentsOfFile: directory.file($0), encoding: .utf8) }
                #expect(kept == "fine\n--streamup-fixed--\n")
            }
        }
    }
}
