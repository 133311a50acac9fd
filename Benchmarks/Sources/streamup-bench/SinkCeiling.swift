import Foundation

/// The sink's own receive rate: a raw-socket sender in the bench that is never the bottleneck
/// (one `send` per 1 MiB chunk of a prebuilt chunked body, no per-byte work) uploads `bytes`
/// to the in-process sink and reads its answer.
///
/// Thread safety: stateless; runs on the caller's thread.
enum SinkCeiling {
    static let chunkSize = 1 << 20

    /// Returns MB/s (10^6 bytes) from connect to the sink's answer.
    static func measure(port: UInt16, bytes: Int, events: SinkEvents) throws(BenchError) -> Double {
        let before = events.count
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize + 32, alignment: 4096)
        defer { chunk.deallocate() }
        chunk.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        let start = MonotonicClock.now()
        let fd = try Descriptors.connectToLoopback(port: port)
        defer { close(fd) }
        guard Descriptors.sendAll(fd, "PUT /ceiling HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n") else {
            throw BenchError.system("sending to the sink")
        }
        var remaining = bytes
        while remaining > 0 {
            let count = min(remaining, chunkSize)
            let header = Array((String(count, radix: 16) + "\r\n").utf8)
            var offset = 0
            for byte in header {
                chunk[offset] = byte
                offset += 1
            }
            // The payload bytes stay as they are (their value does not matter to the sink).
            offset += count
            chunk[offset] = 13
            chunk[offset + 1] = 10
            guard Descriptors.sendAll(fd, UnsafeRawBufferPointer(rebasing: chunk[0..<(offset + 2)])) else {
                throw BenchError.system("sending to the sink")
            }
            remaining -= count
        }
        guard Descriptors.sendAll(fd, "0\r\n\r\n") else { throw BenchError.system("sending to the sink") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.containsHeadEnd {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw BenchError("the sink closed the connection without an answer") }
            answer += buffer[0..<count]
        }
        let seconds = MonotonicClock.seconds(MonotonicClock.now() - start)
        guard let event = events.event(after: before, timeout: 2), event.isComplete, event.bodyByteCount == bytes else {
            throw BenchError("the sink did not report the whole body")
        }
        return Double(bytes) / 1e6 / seconds
    }
}

extension [UInt8] {
    fileprivate var containsHeadEnd: Bool {
        count >= 4 && indices.dropLast(3).contains { self[$0] == 13 && self[$0 + 1] == 10 && self[$0 + 2] == 13 && self[$0 + 3] == 10 }
    }
}
