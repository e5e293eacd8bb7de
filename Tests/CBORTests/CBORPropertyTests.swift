import CBOR
import TestSupport
import Testing

/// Every input the decoder accepts must re-encode to the same bytes; inputs it rejects must be
/// rejected with an error, never a crash. A small seeded generator explores both.
struct CBORPropertyTests {
    static func randomValue(depth: Int, using rng: inout SeededRandom) -> CBORValue {
        let choice = Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng)
        let count = Int.random(in: 0..<6, using: &rng)
        switch choice {
        case 0: return .unsigned(rng.next() >> UInt64.random(in: 0..<64, using: &rng))
        case 1: return .negative(rng.next() >> UInt64.random(in: 0..<64, using: &rng))
        case 2:
            var bytes: [UInt8] = []
            for _ in 0..<count * 7 { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
            return .bytes(bytes)
        case 3:
            let alphabet: [Character] = ["a", "\u{e9}", "\u{6c34}", "\u{10151}"]
            var text = ""
            for _ in 0..<count * 2 { text.append(alphabet[Int(rng.next() % 4)]) }
            return .text(text)
        case 4: return .bool(rng.next() & 1 == 1)
        case 5: return .null
        case 6:
            var elements: [CBORValue] = []
            for _ in 0..<count { elements.append(randomValue(depth: depth + 1, using: &rng)) }
            return .array(elements)
        default:
            var entries: [CBORValue: CBORValue] = [:]
            for _ in 0..<count {
                entries[randomValue(depth: 4, using: &rng)] = randomValue(depth: depth + 1, using: &rng)
            }
            return .map(entries)
        }
    }

    @Test func encodeThenDecodeIsIdentity() throws {
        var rng = SeededRandom(seed: 2026)
        for _ in 0..<2_000 {
            let value = Self.randomValue(depth: 0, using: &rng)
            let bytes = value.encoded()
            #expect(try CBORValue(decoding: bytes) == value)
            #expect(try CBORValue(decoding: bytes).encoded() == bytes)
        }
    }

    /// Mutated encodings either decode to something that re-encodes identically or throw.
    @Test func mutatedInputsReEncodeOrThrow() {
        var rng = SeededRandom(seed: 8949)
        for _ in 0..<5_000 {
            var bytes = Self.randomValue(depth: 0, using: &rng).encoded()
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
                switch Int.random(in: 0..<3, using: &rng) {
                case 0:
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(
                        in: 0...255, using: &rng)
                case 1: bytes.removeLast(Int.random(in: 0...min(3, bytes.count), using: &rng))
                default:
                    bytes.insert(
                        UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng)
                    )
                }
            }
            if let decoded = try? CBORValue(decoding: bytes), !Self.containsFloat(decoded) {
                #expect(decoded.encoded() == bytes)
            }
        }
    }

    static func containsFloat(_ value: CBORValue) -> Bool {
        switch value {
        case .float: true
        case .array(let elements): elements.contains(where: containsFloat)
        case .map(let entries): entries.contains { containsFloat($0.key) || containsFloat($0.value) }
        default: false
        }
    }
}

/// The encoder's fast key ordering must agree with ordering by encoded bytes for every pair of keys.
struct CanonicalKeyOrderTests {
    @Test func fastOrderingMatchesEncodedOrdering() throws {
        var rng = SeededRandom(seed: 7049)
        var keys: [CBORValue] = [
            0, 23, 24, 255, 256, 65535, 65536, -1, -24, -25, -256, -257, "", "a", "b", "aa", "é", "z",
        ]
        for _ in 0..<300 { keys.append(CBORPropertyTests.randomValue(depth: 4, using: &rng)) }
        for a in keys {
            for b in keys where a != b {
                let encoded = CBORValue.map([a: 0, b: 1]).encoded()
                let aFirst = a.encoded().lexicographicallyPrecedes(b.encoded())
                let lengthFirst =
                    a.encoded().count != b.encoded().count ? a.encoded().count < b.encoded().count : aFirst
                let expected =
                    [UInt8]([0xA2])
                    + (lengthFirst ? a.encoded() + [0] + b.encoded() + [1] : b.encoded() + [1] + a.encoded() + [0])
                #expect(encoded == expected, "\(a) vs \(b)")
            }
        }
    }
}
