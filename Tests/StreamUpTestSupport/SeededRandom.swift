import Foundation

/// A small deterministic generator (SplitMix64), so random splits, schedules and payloads can
/// be replayed.
///
/// A test either fixes its seed (`SeededRandom(seed: 7)`) or takes a fresh one (`SeededRandom()`),
/// which comes from `STREAMUP_TEST_SEED` when that is set, so a failure seen once can be
/// replayed. Put the generator in the failure message (`#expect(…, "\(random)")`): its
/// description names the seed.
///
/// Thread safety: a value type that is never shared.
public struct SeededRandom: RandomNumberGenerator, CustomStringConvertible {
    /// The seed this generator started from.
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// A generator seeded from `STREAMUP_TEST_SEED` (decimal or 0x-hex), else at random.
    public init() {
        let text = ProcessInfo.processInfo.environment["STREAMUP_TEST_SEED"] ?? ""
        let given = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        var system = SystemRandomNumberGenerator()
        self.init(seed: given ?? system.next())
    }

    /// "seed N (replay with STREAMUP_TEST_SEED=N)".
    public var description: String { "seed \(seed) (replay with STREAMUP_TEST_SEED=\(seed))" }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(count + 8)
        while result.count < count {
            withUnsafeBytes(of: next()) { result.append(contentsOf: $0) }
        }
        result.removeLast(result.count - count)
        return result
    }

    /// Cuts `bytes` at random points into pieces of 1...`maximum` bytes.
    public mutating func split(_ bytes: [UInt8], maximum: Int) -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + Int.random(in: 1...maximum, using: &self))
            pieces.append(Array(bytes[start..<end]))
            start = end
        }
        return pieces
    }
}
