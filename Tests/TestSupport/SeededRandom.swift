import Synchronization

/// Vigna's SplitMix64: a small deterministic generator, so every randomised test replays exactly. One draw of
/// `next()` for a given seed is the same in every test target; tests that pinned a seed to hit a case rely on it.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The generator's whole state: the seed, advanced by one step per draw.
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes, eight per draw, least significant byte first (the last draw's unused bytes are
    /// dropped).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(count)
        while output.count < count {
            var word = next()
            for _ in 0..<min(8, count - output.count) {
                output.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return output
    }

    /// A number in `0..<bound` (bound > 0); the slight modulo bias does not matter for fuzzing.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// `true` with probability `1/n`.
    public mutating func oneIn(_ n: Int) -> Bool { below(n) == 0 }

    /// One to `maximumEdits` random edits of `bytes`: overwrite, flip a bit, insert, delete, truncate or duplicate
    /// a run. New bytes come from `alphabet` when given.
    public mutating func mutate(_ bytes: [UInt8], maximumEdits: Int = 3, alphabet: [UInt8]? = nil) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<1 + below(maximumEdits) {
            let newByte = alphabet.map { $0[below($0.count)] } ?? UInt8(truncatingIfNeeded: next())
            switch below(6) {
            case 0 where !bytes.isEmpty:
                bytes[below(bytes.count)] = newByte
            case 1 where !bytes.isEmpty:
                let index = below(bytes.count)
                bytes[index] ^= 1 << UInt8(below(8))
            case 2:
                bytes.insert(newByte, at: below(bytes.count + 1))
            case 3 where !bytes.isEmpty:
                bytes.remove(at: below(bytes.count))
            case 4 where !bytes.isEmpty:
                bytes.removeLast(1 + below(min(bytes.count, 8)))
            case 5 where !bytes.isEmpty:
                let start = below(bytes.count)
                let run = bytes[start..<min(bytes.count, start + 1 + below(8))]
                bytes.insert(contentsOf: run, at: below(bytes.count + 1))
            default:
                bytes.append(newByte)
            }
        }
        return bytes
    }
}

/// A ``SeededRandom`` behind a lock, as a `randomBytes` closure for code under test that may call it from any
/// task: the same seed gives the same keys, nonces and QR codes.
public final class SeededBytes: Sendable {
    private let random: Mutex<SeededRandom>

    public init(seed: UInt64) { random = Mutex(SeededRandom(seed: seed)) }

    /// The next `count` bytes of the sequence.
    public func bytes(_ count: Int) -> [UInt8] { random.withLock { $0.bytes(count) } }

    public func callAsFunction(_ count: Int) -> [UInt8] { bytes(count) }
}
