import Foundation
import Basics
import Testing

/// RFC 4648 §10 test vectors in the URL-safe alphabet, with and without padding.
struct Base64URLTests {
    static let rfc4648: [(bytes: String, unpadded: String, padded: String)] = [
        ("", "", ""), ("f", "Zg", "Zg=="), ("fo", "Zm8", "Zm8="), ("foo", "Zm9v", "Zm9v"),
        ("foob", "Zm9vYg", "Zm9vYg=="), ("fooba", "Zm9vYmE", "Zm9vYmE="), ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
    ]

    @Test(arguments: rfc4648)
    func encodesUnpaddedAndDecodesBothForms(bytes: String, unpadded: String, padded: String) {
        let raw = Array(bytes.utf8)
        #expect(raw.base64URLEncodedString == unpadded)
        #expect([UInt8](base64URLEncoded: unpadded) == raw)
        #expect([UInt8](base64URLEncoded: padded) == raw)
    }

    /// 0xfb 0xff 0xbf uses both URL-safe characters: `-` (62) and `_` (63).
    @Test func usesTheURLSafeAlphabet() {
        #expect([0xFB, 0xFF, 0xBF].base64URLEncodedString == "-_-_")
        #expect([UInt8](base64URLEncoded: "-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test(arguments: [
        "+/+/",  // standard alphabet, not URL-safe
        "Zm9v YmFy",  // whitespace
        "Zm9v\n",  // newline
        "Zg=",  // wrong amount of padding
        "Zg===",  // too much padding
        "Z",  // a single character cannot encode a byte
        "Zm9vY",  // 5 characters: one left over
        "Z=g=",  // padding inside the text
        "=Zg=",  // padding first
        "Zm9v8J+Ygw",  // non-ASCII
        "é",
    ])
    func rejectsInvalidText(text: String) {
        #expect([UInt8](base64URLEncoded: text) == nil)
    }

    @Test func roundTripsEveryByteValue() {
        let all = (0...255).map(UInt8.init)
        for length in [0, 1, 2, 3, 31, 32, 33, 256] {
            let prefix = Array(all.prefix(length))
            #expect([UInt8](base64URLEncoded: prefix.base64URLEncodedString) == prefix)
        }
    }

    @Test(
        arguments: [
            ("", []), ("_w", [0xFF]), ("_-4", [0xFF, 0xEE]), ("-_8B", [0xFB, 0xFF, 0x01]),
            ("Zm9vYmFy", Array("foobar".utf8)),
        ] as [(String, [UInt8])])
    func canonicalFormDecodes(text: String, bytes: [UInt8]) {
        #expect([UInt8](canonicalBase64URLEncoded: text) == bytes)
        #expect(bytes.base64URLEncodedString == text)
    }

    /// Padding, and unused bits that are set (`_x` decodes to 0xFF in a lenient decoder but re-encodes as `_w`).
    @Test(arguments: ["Zg==", "Zm8=", "_x", "_-5", "a", "Zm9v+", "Zm9v/"])
    func otherFormsAreRefusedByTheCanonicalDecoder(text: String) {
        #expect([UInt8](canonicalBase64URLEncoded: text) == nil)
    }

    /// The unpadded decoder takes what browsers write, unused bits included, and refuses padding.
    @Test func theUnpaddedDecoderRefusesOnlyPaddingAndNonBase64URL() {
        #expect([UInt8](unpaddedBase64URLEncoded: "Zm8") == Array("fo".utf8))
        #expect([UInt8](unpaddedBase64URLEncoded: "_x") == [0xFF])
        #expect([UInt8](unpaddedBase64URLEncoded: "") == [])
        for text in ["Zm8=", "Zg==", "Zm9v+", "Zm9v/", "a", "Zm 8"] {
            #expect([UInt8](unpaddedBase64URLEncoded: text) == nil, "\(text)")
        }
    }

    /// The byte-level decoder agrees with the plain statement of its rule (Foundation's decoder after swapping the
    /// alphabet, padding only at the end and completing a group) on 20,000 random texts near the alphabet.
    @Test func agreesWithTheRuleOnRandomText() {
        let characters = Array("AZaz09-_+/=é \n")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let text = String(
                (0..<Int.random(in: 0...9, using: &generator)).map { _ in
                    characters.randomElement(using: &generator)!
                })
            #expect([UInt8](base64URLEncoded: text) == Self.reference(text), "\(text)")
        }
    }

    static func reference(_ text: String) -> [UInt8]? {
        let padding = text.reversed().prefix(while: { $0 == "=" }).count
        let body = text.dropLast(padding)
        guard body.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
            body.count % 4 != 1, padding == 0 || (padding <= 2 && (body.count + padding) % 4 == 0)
        else { return nil }
        var standard = body.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
