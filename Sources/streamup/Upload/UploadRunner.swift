import Foundation
import StreamUp
import StreamUpHTTP
import StreamUpSink
import StreamUpTail

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs `streamup [options] [URL...]`: stdin → acknowledged segments (or one chunked request,
/// `--single-request`) → exit status from the answers, through an ``UploadSession``.
///
/// Thread safety: runs on the main task; callbacks only print.
enum UploadRunner {
    /// The buffer of one live request (`--single-request`) without `--buffer-size`: 1 MiB.
    /// Against 64 KiB it cuts the wake-ups per byte, for about 1.4× the throughput
    /// (Benchmarks/RESULTS.md); latency is the same, since nothing waits for it to fill.
    static let liveBufferSize = 1 << 20

    static func run(_ options: UploadOptions) async -> Int32 {
        let formatter: RecordFormatter?
        let multiline = options.records.multiline
        let parse = options.records.parse
        let filter = options.records.filter
        do {
            let wholeLines = multiline != nil || parse != nil || filter != nil
            formatter = wholeLines ? try options.multilineFormatter() : try options.recordFormatter()
        } catch {
            Terminal.error("\(error)")
            return ExitStatus.usage
        }
        let session = UploadSession(options)
        return await session.withTarget { url in
            guard let formatter else { return await session.run(to: url, producer: FileDescriptorProducer(fileDescriptor: 0)).status }
            // Lines become records on the thread that reads them (one formatting path with the tailer).
            let formatting = LineFormatting(
                formatter, multiline: multiline, parse: parse,
                streamFormatter: { stream in try? options.multilineFormatter(extra: [(name: "stream", value: stream)]) }, filter: filter)
            return await session.run(to: url, producer: FileDescriptorProducer(fileDescriptor: 0, formatting: formatting)).status
        }
    }

    /// A duration as the options take it: `30s`, `250ms`.
    static func short(_ duration: Duration) -> String {
        duration.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))
    }
}

extension UploadOptions.DeliveryOptions {
    /// The library's options with these overrides.
    var libraryOptions: StreamUploader.Options { libraryOptions(base: StreamUploader.Options()) }

    /// The library's options `base` (the defaults, or a receiver's) with these overrides.
    func libraryOptions(base: StreamUploader.Options) -> StreamUploader.Options {
        var options = base
        options.records = records
        if let maxRecordBytes { options.maxRecordBytes = maxRecordBytes }
        // A shipper rides out an outage of any length unless told otherwise (the library's
        // own default, for apps, stops after a number of retries).
        options.retry.maxRetries = retries ?? nil
        options.retry.maxRetryTime = retryMaxTime
        if let segmentBytes { options.segmentBytes = segmentBytes }
        if let segmentDuration { options.segmentDuration = segmentDuration }
        if let spoolDirectory { options.storage = .spool(directory: URL(fileURLWithPath: spoolDirectory), capacity: spoolBytes) }
        options.delivery = resumable ? .resumableUpload : .requests
        if let retryStatuses { options.retry.retryableStatuses = retryStatuses }
        options.deadLetterDirectory = deadLetterDirectory.map { URL(fileURLWithPath: $0) }
        options.streamID = streamID
        return options
    }
}
