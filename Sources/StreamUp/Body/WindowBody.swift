import Foundation
import StreamUpSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The complete body of one segment request, built before the request starts: the cut
/// segment's records (``WindowSource``) through the body stages of its ``BodyEncoding``
/// (envelope, gzip), read to their end. The request carries its `Content-Length`, so
/// URLSession never waits for a body byte (DesignNotes, platform facts 3 and 10) and no
/// `Transfer-Encoding: chunked` is sent.
///
/// URLSession reads it as a stream, so that a body libcurl must re-send (a reused connection
/// that turned out dead) goes out again from its start: each attempt gets a fresh stream over
/// the same bytes (corelibs does not rewind a `Data` body for a re-send, measured: the short
/// re-sent body met 408). Resumable appends refuse a re-send instead: a PATCH re-sent with its
/// stale `Upload-Offset` after part of it arrived would conflict; the request fails and HEAD
/// says where to go on. A segment that fits one libcurl read goes as `Data` instead
/// (``oneReadData()``), and refuses a re-send the same way.
///
/// Memory: a body that is the records as they are (no envelope, no gzip) held in memory is not
/// copied: its streams read the replay buffer, which keeps those bytes until they are
/// acknowledged. Any other body is a copy of at most one segment (its envelope added, or
/// gzipped), held while its request runs.
///
/// Thread safety: the body and the streams handed out are guarded by a `Mutex` (URLSession
/// asks for streams on its delegate queue, the delivery task reads what was sent).
final class WindowBody: RequestBody, Sendable {
    private struct Current {
        /// The body, until the request is over (URLSession may hold a finished task, and its
        /// stream, a while longer: the bytes go at once).
        var data: Data?
        var stream: StreamReference<BodyInputStream>?
        var refused: StreamUpError?
        /// The most bytes any stream of this request handed out.
        var furthest = 0
        /// The body went to URLSession as `Data` (``oneReadData()``), which it cannot re-send.
        var handedAsData = false
        /// The request is over: no more streams.
        var closed = false
    }
    /// The most body bytes libcurl takes in one read: its upload buffer (`CURLOPT_UPLOAD_BUFFERSIZE`,
    /// 64 KiB by default, which corelibs leaves as it is).
    static let oneRead = 64 * 1024
    /// The stream range the body carries.
    let range: Range<Int>
    /// The body's length in bytes (its `Content-Length`).
    let length: Int
    private let allowsResend: Bool
    /// The buffer the streams read, when the body is its records as they are.
    private let records: ReplayBuffer?
    private let current: Mutex<Current>

    /// Builds the body of `range` of `buffer` as `encoding` says; `streamID`: the stream the
    /// records belong to, for an envelope that names each record by its place in it; `names`:
    /// the names of records made from source lines, before their place.
    /// - Throws: ``StreamUpError`` when a stage refuses the records (a multipart boundary in
    ///   them) or the storage cannot be read.
    init(
        _ range: Range<Int>, of buffer: ReplayBuffer, encoding: BodyEncoding, allowsResend: Bool, streamID: String? = nil,
        names: RecordNames? = nil
    ) throws {
        self.range = range
        self.allowsResend = allowsResend
        if encoding.isIdentity, !buffer.storage.isDurable, range.count > Self.oneRead {
            // Read from the buffer, where the bytes stay until acknowledged (after the answer):
            // a copy would add a segment to peak memory. (A spool is read by the delivery task
            // instead, never by URLSession's shared queue, fact 3; a small body goes as `Data`.)
            records = buffer
            length = range.count
            current = Mutex(Current())
        } else {
            let origin = streamID.map { StreamOrigin(streamID: $0, offset: range.lowerBound, names: names) }
            let data = try Self.build(encoding.stages(over: WindowSource(buffer: buffer, range: range), origin: origin), expected: range.count)
            records = nil
            length = data.count
            current = Mutex(Current(data: data))
        }
    }

    /// Reads `top` to its end. The window's end is fixed, so no stage ever waits for input.
    ///
    /// The bytes live in pages of their own (`mmap`), returned when the body goes: a body of
    /// megabytes from `malloc` stays in the arena of whichever thread built it once freed, and
    /// with the delivery task moving between threads, peak memory grew by several segments
    /// (measured: 500 MB in 8 MiB segments, 88–111 MiB peak RSS against 49 MiB before).
    private static func build(_ top: any BodySource, expected: Int) throws -> Data {
        var region = try MappedRegion(capacity: max(expected + expected / 4, 64 * 1024))
        var filled = 0
        while true {
            let read: BodyRead
            do {
                if filled == region.capacity { region = try region.grown(keeping: filled) }
                read = try top.read(into: UnsafeMutableRawBufferPointer(rebasing: region.bytes[filled...]), blocking: false)
            } catch {
                region.unmap()
                throw error
            }
            switch read {
            case .bytes(let count):
                filled += count
            case .end:
                return region.data(count: filled)
            case .wouldBlock:
                preconditionFailure("a body stage over a cut segment said it would wait")
            }
        }
    }

    /// The body as `Data`, when it is a segment libcurl takes in one read (at most
    /// ``oneRead`` bytes); nil otherwise. Handed over this way, libcurl knows the length, ends
    /// the body in the read that sends it and then waits for the answer on read readiness
    /// alone, which on a reused connection costs no CPU. A stream's length is unknown to
    /// libcurl: it asks for write readiness once more to find the end, and URLSession's write
    /// source then fires until the answer comes (DesignNotes, platform fact 9: about half a
    /// core for as long as the answer takes, measured). corelibs cannot send a `Data` body again, so a re-send is
    /// refused (``stream(forAttempt:)``): the request ends and the delivery sends the segment
    /// again itself, as for any broken connection.
    func oneReadData() -> Data? {
        guard allowsResend, length <= Self.oneRead else { return nil }
        return current.withLock { current in
            current.handedAsData = current.data != nil
            return current.data
        }
    }

    /// URLSession read `count` bytes of a body handed over as `Data` (`countOfBytesSent`).
    func noteSent(_ count: Int) {
        current.withLock { $0.furthest = max($0.furthest, count) }
    }

    func stream(forAttempt attempt: Int) -> InputStream? {
        let (previous, data, handedAsData) = current.withLock { current -> (BodyInputStream?, Data?, Bool) in
            current.furthest = max(current.furthest, current.stream?.value.bytesRead ?? 0)
            return (current.stream?.value, current.data, current.handedAsData)
        }
        if handedAsData {
            // Only a re-send asks a `Data` body for a stream, and corelibs would crash on one
            // (it rewinds stream bodies only): refuse, and the request fails.
            current.withLock { $0.refused = StreamUpError(.bodyNotRewindable, "the connection broke before an answer came") }
            return nil
        }
        if attempt > 1, !allowsResend {
            // URLSession keeps reading the old stream when given none (fact 2): fail it.
            let again = StreamUpError(.bodyNotRewindable, "URLSession asked to send the append again")
            previous?.fail(again)
            current.withLock { $0.refused = again }
            return nil
        }
        let source: any BodySource
        if let records {
            guard !current.withLock({ $0.closed }) else { return nil }
            source = WindowSource(buffer: records, range: range)
        } else {
            guard let data else { return nil }
            source = DataSource(data)
        }
        let stream = BodyInputStream(source: source)
        current.withLock { $0.stream = StreamReference(stream) }
        return stream
    }

    /// The most bytes any stream of this request handed to URLSession (a stream libcurl gave
    /// up on for a re-send counts: its bytes went out).
    var bytesSent: Int {
        current.withLock { max($0.furthest, $0.stream?.value.bytesRead ?? 0) }
    }

    var failure: StreamUpError? {
        current.withLock { $0.refused ?? ($0.stream?.value.streamError as? StreamUpError) }
    }

    /// The request is over: the body's bytes go (nothing waits on a complete body).
    func close() {
        current.withLock { current in
            current.data = nil
            current.closed = true
        }
    }

    func abort(_ error: StreamUpError) {
        current.withLock { $0.stream?.value }?.fail(error)
    }
}

/// The bytes of a complete body as a body stage.
///
/// Thread safety: one reading thread at a time (``BodySource``); not Sendable.
private final class DataSource: BodySource {
    /// The bytes, until they are all read.
    private var data: Data?
    private var position = 0

    init(_ data: Data) { self.data = data }

    func read(into buffer: UnsafeMutableRawBufferPointer, blocking: Bool) throws -> BodyRead {
        guard let data, position < data.count else {
            self.data = nil
            return .end
        }
        let count = min(buffer.count, data.count - position)
        data.withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress!.advanced(by: position), byteCount: count)
        }
        position += count
        return .bytes(count)
    }
}

/// Anonymous pages for one body; ``data(count:)`` hands them to a `Data` that unmaps them.
///
/// Thread safety: owned by the task that builds the body.
private struct MappedRegion {
    let bytes: UnsafeMutableRawBufferPointer
    var capacity: Int { bytes.count }

    init(capacity: Int) throws {
        guard let pages = AnonymousPages.map(capacity) else {
            throw StreamUpError(.io, "cannot map \(capacity) bytes for a segment's body: \(String(cString: strerror(errno)))")
        }
        bytes = pages
    }

    /// A region twice the size holding the first `count` bytes of this one, which is unmapped.
    func grown(keeping count: Int) throws -> MappedRegion {
        let larger = try MappedRegion(capacity: capacity * 2)
        larger.bytes.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: count)
        unmap()
        return larger
    }

    /// Returns the pages (the region is not used after this).
    func unmap() {
        AnonymousPages.unmap(bytes)
    }

    /// The first `count` bytes as a `Data` that owns (and finally unmaps) the region.
    func data(count: Int) -> Data {
        let capacity = self.capacity
        return Data(
            bytesNoCopy: bytes.baseAddress!, count: count,
            deallocator: .custom { pointer, _ in
                AnonymousPages.unmap(UnsafeMutableRawBufferPointer(start: pointer, count: capacity))
            })
    }
}
