import Testing

@testable import StreamUpSink

/// Known-answer vectors from FIPS 180-4 / NIST CAVS, plus split-independence.
struct SHA256Tests {
    /// The digest of the empty message is the published constant.
    @Test func emptyMessageHashesToTheKnownVector() {
        #expect(
            SHA256.hex(SHA256.hash([]))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// "abc" hashes to the one-block vector.
    @Test func abcHashesToTheOneBlockVector() {
        #expect(
            SHA256.hex(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// The 448-bit message hashes to the two-block vector (padding spills into a second block).
    @Test func the448BitMessageHashesToTheTwoBlockVector() {
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(
            SHA256.hex(SHA256.hash(message))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    /// The 896-bit message hashes to its published vector.
    @Test func the896BitMessageHashesToItsVector() {
        let message = Array(
            ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                + "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu").utf8)
        #expect(
            SHA256.hex(SHA256.hash(message))
                == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    /// One million 'a' bytes, fed in uneven pieces, hash to the long-message vector.
    @Test func oneMillionAsHashToTheLongMessageVector() {
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000)
        var hasher = SHA256()
        var fed = 0
        var step = 1
        while fed < 1_000_000 {
            let count = min(step, 1_000_000 - fed, piece.count)
            hasher.update(Array(piece[0..<count]))
            fed += count
            step = step % 997 + 13
        }
        #expect(
            SHA256.hex(hasher.finalize())
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Messages around the padding boundaries hash the same whether fed at once or byte by byte.
    @Test(arguments: [55, 56, 57, 63, 64, 65, 119, 120, 128, 1_000])
    func digestDoesNotDependOnHowTheInputIsSplit(length: Int) {
        let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var byteByByte = SHA256()
        for byte in message {
            byteByByte.update([byte])
        }
        #expect(byteByByte.finalize() == SHA256.hash(message))
    }

    /// Hex text is lower case, two digits per byte.
    @Test func hexIsLowerCaseTwoDigitsPerByte() {
        #expect(SHA256.hex([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
    }
}
