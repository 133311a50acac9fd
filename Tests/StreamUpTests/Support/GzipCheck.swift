import StreamUpTestSupport
import Testing

/// Decodes gzip output with decoders that are not ours: Python's `zlib`/`gzip` modules and the
/// `gzip` program.
///
/// Thread safety: stateless.
enum GzipCheck {
    /// What Python's streaming decoder makes of `data` read as gzip (`zlib.decompressobj(16 + 15)`).
    struct Decoded {
        /// Every byte decodable from `data`.
        var bytes: [UInt8]
        /// A complete member (trailer and all) was read.
        var memberEnded: Bool
        /// Bytes after the end of the first member.
        var trailing: Int
    }

    /// Feeds `data` to one Python gzip decoder, as a receiver reading a live body would.
    static func pythonStream(_ data: [UInt8]) throws -> Decoded {
        let program = """
            import sys, zlib
            data = sys.stdin.buffer.read()
            d = zlib.decompressobj(16 + 15)
            out = d.decompress(data)
            sys.stderr.write("%d %d" % (int(d.eof), len(d.unused_data)))
            sys.stdout.buffer.write(out)
            """
        let result = try ExternalTool.python(program, input: data)
        #expect(result.status == 0, "python3 zlib failed: \(result.errorText)")
        let fields = result.errorText.split(separator: " ").compactMap { Int($0) }
        guard fields.count == 2 else {
            Issue.record("python3 zlib said: \(result.errorText)")
            return Decoded(bytes: [], memberEnded: false, trailing: 0)
        }
        return Decoded(bytes: result.output, memberEnded: fields[0] == 1, trailing: fields[1])
    }

    /// Python's `gzip.decompress` (all members, trailers checked).
    static func pythonGzip(_ data: [UInt8]) throws -> [UInt8] {
        let result = try ExternalTool.python(
            "import sys, gzip; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))", input: data)
        #expect(result.status == 0, "python3 gzip.decompress failed: \(result.errorText)")
        return result.output
    }

    /// `gzip -dc` (GNU gzip, which checks the CRC and length).
    static func gzipProgram(_ data: [UInt8]) throws -> [UInt8] {
        let result = try ExternalTool.run(["gzip", "-dc"], input: data)
        #expect(result.status == 0, "gzip -dc failed: \(result.errorText)")
        return result.output
    }

    /// Checks that `data` is exactly one complete gzip member holding `expected`, by all three.
    static func expectOneMember(_ data: [UInt8], holding expected: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let stream = try pythonStream(data)
        #expect(stream.memberEnded, "the gzip member has no end", sourceLocation: sourceLocation)
        #expect(stream.trailing == 0, "bytes after the gzip member", sourceLocation: sourceLocation)
        // Compared outside #expect so a mismatch reports sizes, not megabytes of bytes.
        let decoders = [("python zlib", stream.bytes), ("python gzip", try pythonGzip(data)), ("gzip -dc", try gzipProgram(data))]
        for (decoder, decoded) in decoders {
            let same = decoded == expected
            #expect(same, "\(decoder) decoded \(decoded.count) bytes that differ from the \(expected.count) written", sourceLocation: sourceLocation)
        }
    }
}
