import CBOR
import Hybrid
import TestSupport
import Testing

struct DigitEncodingTests {
    struct Vector: Decodable {
        var bytes: String
        var digits: String
    }

    @Test func vectorsEncodeAndDecode() throws {
        let vectors = try HybridVectors.decodedSection("digits", as: Vector.self)
        for vector in vectors {
            let bytes = try HybridVectors.hexBytes(vector.bytes)
            #expect(DigitEncoding.encode(bytes) == vector.digits, "\(vector.bytes)")
            #expect(try DigitEncoding.decode(vector.digits) == bytes, "\(vector.digits)")
        }
    }

    @Test func rejectedVectorsThrow() throws {
        let rejected = try HybridVectors.section("digits_rejected")
        try #require(!rejected.isEmpty, "section digits_rejected is empty")
        for case let digits as String in rejected {
            #expect(throws: DigitEncodingError.self, "\(digits)") { try DigitEncoding.decode(digits) }
        }
        #expect(rejected.allSatisfy { $0 is String })
    }

    @Test(arguments: [
        ("12a", DigitEncodingError.invalidCharacter(offset: 2)),
        ("+12", .invalidCharacter(offset: 0)),
        (" 12", .invalidCharacter(offset: 0)),
        ("-12", .invalidCharacter(offset: 0)),
        ("1.2", .invalidCharacter(offset: 1)),
        ("\u{0661}\u{0662}\u{0663}", .invalidCharacter(offset: 0)),  // Arabic-Indic digits
        ("\u{FF11}23", .invalidCharacter(offset: 0)),  // fullwidth 1
        ("00000000000000000x", .invalidCharacter(offset: 17)),
    ])
    func nonDigitsAreRejected(digits: String, expected: DigitEncodingError) {
        #expect(throws: expected) { try DigitEncoding.decode(digits) }
    }

    /// Only 0, 3, 5, 8, 10, 13 and 15 digits may follow the last full chunk.
    @Test func remainderLengthsOutsideTheTableAreRejected() throws {
        let valid: Set = [0, 3, 5, 8, 10, 13, 15]
        for fullChunks in 0..<3 {
            for remainder in 0..<17 {
                let digits = String(repeating: "0", count: 17 * fullChunks + remainder)
                if valid.contains(remainder) {
                    let bytes = try DigitEncoding.decode(digits)
                    #expect(
                        bytes
                            == [UInt8](
                                repeating: 0,
                                count: 7 * fullChunks + [0, 3, 5, 8, 10, 13, 15].firstIndex(of: remainder)!))
                } else {
                    #expect(throws: DigitEncodingError.invalidRemainderLength(remainder)) {
                        try DigitEncoding.decode(digits)
                    }
                }
            }
        }
    }

    /// The largest value of each width decodes to all-ones bytes; one more is out of range.
    @Test(arguments: [
        (7, "72057594037927935", "72057594037927936"),
        (1, "255", "256"),
        (2, "65535", "65536"),
        (3, "16777215", "16777216"),
        (4, "4294967295", "4294967296"),
        (5, "1099511627775", "1099511627776"),
        (6, "281474976710655", "281474976710656"),
    ])
    func valuesMustFitTheirBytes(byteCount: Int, largest: String, tooLarge: String) throws {
        #expect(try DigitEncoding.decode(largest) == [UInt8](repeating: 0xFF, count: byteCount))
        #expect(throws: DigitEncodingError.chunkOutOfRange(offset: 0)) { try DigitEncoding.decode(tooLarge) }
        // The same after one full chunk: the offset points at the bad chunk.
        let prefix = "00000000000000000"
        #expect(throws: DigitEncodingError.chunkOutOfRange(offset: 17)) { try DigitEncoding.decode(prefix + tooLarge) }
        #expect(throws: DigitEncodingError.chunkOutOfRange(offset: 17)) {
            try DigitEncoding.decode(prefix + "99999999999999999")
        }
    }

    @Test func randomBytesRoundTrip() throws {
        var random = SeededRandom(seed: 10)
        for length in 0..<80 {
            for _ in 0..<20 {
                let bytes = random.bytes(length)
                let digits = DigitEncoding.encode(bytes)
                #expect(digits.utf8.count == length / 7 * 17 + [0, 3, 5, 8, 10, 13, 15][length % 7])
                #expect(try DigitEncoding.decode(digits) == bytes)
            }
        }
    }

    @Test func decodesSubstrings() throws {
        let text = "FIDO:/16736865"
        #expect(try DigitEncoding.decode(text.dropFirst(6)) == [0x61, 0x62, 0xFF])
    }
}
