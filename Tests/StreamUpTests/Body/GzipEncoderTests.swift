import Foundation
import StreamUpTestSupport
import Testing

@testable import StreamUp

@Suite struct GzipEncoderTests {
    /// Runs `encoder` over all of `input` with `flush`, in output pieces of `outputSize` bytes.
    private func encode(_ encoder: GzipEncoder, _ input: [UInt8], flush: GzipEncoder.Flush, outputSize: Int = 4096) -> [UInt8] {
        var output: [UInt8] = []
        var room = [UInt8](repeating: 0, count: outputSize)
        var offset = 0
        repeat {
            let step = input.withUnsafeBytes { bytes in
                room.withUnsafeMutableBytes { out in
                    encoder.encode(input: UnsafeRawBufferPointer(rebasing: bytes[offset...]), into: out, flush: flush)
                }
            }
            offset += step.consumed
            output += room.prefix(step.produced)
        } while offset < input.count || encoder.isFlushing
        return output
    }

    /// A finished member decodes byte-exact with Python's zlib and gzip modules and with gzip -dc.
    @Test(arguments: [Int32(1), 6, 9])
    func finishedMemberDecodesWithIndependentDecoders(level: Int32) throws {
        let input = LogLines.text(count: 5000)
        let encoder = try GzipEncoder(level: level)
        var output = encode(encoder, Array(input[..<1000]), flush: .none, outputSize: 100)
        output += encode(encoder, Array(input[1000...]), flush: .finish, outputSize: 100)
        #expect(encoder.isFinished)
        #expect(!encoder.hasUnflushedInput)
        try GzipCheck.expectOneMember(output, holding: input)
    }

    /// After a sync flush, everything taken so far decodes before the member ends.
    @Test func syncFlushMakesEverythingTakenDecodable() throws {
        let lines = LogLines.make(count: 200)
        let encoder = try GzipEncoder()
        var output: [UInt8] = []
        var written: [UInt8] = []
        for line in lines.prefix(120) {
            output += encode(encoder, line + [0x0A], flush: .none)
            written += line + [0x0A]
        }
        #expect(encoder.hasUnflushedInput)
        output += encode(encoder, [], flush: .sync)
        #expect(!encoder.hasUnflushedInput)
        #expect(output.suffix(4) == [0x00, 0x00, 0xFF, 0xFF], "a sync flush ends with an empty stored block")

        let prefix = try GzipCheck.pythonStream(output)
        #expect(prefix.bytes == written)
        #expect(!prefix.memberEnded)
    }

    /// `reset()` after a finish starts a second member; the two concatenated decode to both inputs.
    @Test func resetStartsANewMember() throws {
        let first = Array("first member\n".utf8)
        let second = Array("second member\n".utf8)
        let encoder = try GzipEncoder()
        let one = encode(encoder, first, flush: .finish)
        encoder.reset()
        #expect(!encoder.isFinished)
        let two = encode(encoder, second, flush: .finish)

        try GzipCheck.expectOneMember(two, holding: second)
        let stream = try GzipCheck.pythonStream(one + two)
        #expect(stream.bytes == first)
        #expect(stream.trailing == two.count)
        #expect(try GzipCheck.pythonGzip(one + two) == first + second)
    }

    /// A level zlib does not have is refused with a message naming it.
    @Test func levelOutsideZeroToNineIsRefused() {
        #expect {
            _ = try GzipEncoder(level: 10)
        } throws: { error in
            (error as? StreamUpError)?.code == .invalidConfiguration && "\(error)".contains("10")
        }
    }

    /// crc32 gives the CRC-32 check value of "123456789" (0xCBF43926, the CRC catalogue's check
    /// for CRC-32/ISO-HDLC, the gzip polynomial), continues across pieces through `seed`, and
    /// agrees with Python's zlib.crc32.
    @Test func crc32MatchesTheStandardCheckValueAndPython() throws {
        #expect(Checksum.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Checksum.crc32([]) == 0)

        var random = SeededRandom(seed: 7)
        let bytes = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let whole = Checksum.crc32(bytes)
        let split = Checksum.crc32(Array(bytes[40_000...]), continuing: Checksum.crc32(Array(bytes[..<40_000])))
        #expect(split == whole)
        let python = try ExternalTool.python("import sys, zlib; print(zlib.crc32(sys.stdin.buffer.read()))", input: bytes)
        #expect(String(decoding: python.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == String(whole))
    }
}
