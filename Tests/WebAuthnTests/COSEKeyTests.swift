import Basics
import CBOR
import Crypto
import Testing
import WebAuthn
import _CryptoExtras

struct COSEKeyTests {
    /// The credential public key of the W3C WebAuthn Level 3 test vector "ES256 Credential with No
    /// Attestation" (§16, #sctn-test-vectors-none-es256).
    static let specKeyHex =
        "a5010203262001215820afefa16f97ca9b2d23eb86ccb64098d20db90856062eb249c33a9b672f26df61"
        + "225820930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b9220"

    @Test func parsesAndReencodesTheSpecKey() throws {
        let bytes = try #require([UInt8](hex: Self.specKeyHex))
        let key = try COSEKey(coseRepresentation: try CBORValue(decoding: bytes))
        #expect(key.algorithm == .es256)
        #expect(
            key.material
                == .p256(
                    x: try #require([UInt8](hex: "afefa16f97ca9b2d23eb86ccb64098d20db90856062eb249c33a9b672f26df61")),
                    y: try #require([UInt8](hex: "930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b9220"))))
        #expect(key.coseRepresentation.encoded() == bytes)
    }

    @Test func roundTripsASwiftCryptoKey() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = COSEKey(publicKey: privateKey.publicKey)
        let decoded = try COSEKey(coseRepresentation: try CBORValue(decoding: key.coseRepresentation.encoded()))
        #expect(decoded == key)
        #expect(try decoded.signingKey().rawRepresentation == privateKey.publicKey.rawRepresentation)
        // The encoding is the canonical {1: 2, 3: -7, -1: 1, -2: x, -3: y}.
        #expect(Array(key.coseRepresentation.encoded().prefix(10)).hexString == "a5010203262001215820")
    }

    @Test func ed25519KeysOfBothIdentifiersRoundTripAndVerify() throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        for algorithm in [COSEAlgorithm.eddsa, .ed25519] {
            let key = COSEKey(publicKey: privateKey.publicKey, algorithm: algorithm)
            let encoded = key.coseRepresentation.encoded()
            // {1: 1, 3: alg, -1: 6, -2: x}: OKP on Ed25519 (RFC 9053 §7.2).
            #expect(
                try CBORValue(decoding: encoded) == [
                    1: 1, 3: .int(algorithm.rawValue), -1: 6, -2: .bytes(Array(privateKey.publicKey.rawRepresentation)),
                ])
            let decoded = try COSEKey(coseRepresentation: try CBORValue(decoding: encoded))
            #expect(decoded == key)
            let message: [UInt8] = Array("signed".utf8)
            let signature = Array(try privateKey.signature(for: message))
            #expect(decoded.isValidSignature(signature, for: message))
            #expect(!decoded.isValidSignature(signature, for: message + [0]))
            #expect(decoded.subjectPublicKeyInfo == Array(privateKey.publicKey.derRepresentation))
        }
    }

    @Test func es256AndESP256VerifyDERSignatures() throws {
        let privateKey = P256.Signing.PrivateKey()
        let message: [UInt8] = Array("signed".utf8)
        let signature = Array(try privateKey.signature(for: message).derRepresentation)
        for algorithm in [COSEAlgorithm.es256, .esp256] {
            let key = try COSEKey(
                coseRepresentation: COSEKey(publicKey: privateKey.publicKey, algorithm: algorithm).coseRepresentation)
            #expect(key.algorithm == algorithm && key.isValidSignature(signature, for: message))
            #expect(!key.isValidSignature(signature, for: message + [0]))
            #expect(!key.isValidSignature(Array(signature.dropLast()), for: message))
        }
    }

    @Test func rs256KeysVerifyPKCS1Signatures() throws {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let components = try privateKey.publicKey.getKeyPrimitives()
        let value: CBORValue = [
            1: 3, 3: -257, -1: .bytes(Array(components.modulus)), -2: .bytes(Array(components.publicExponent)),
        ]
        let key = try COSEKey(coseRepresentation: value)
        #expect(key.algorithm == .rs256)
        let message: [UInt8] = Array("signed".utf8)
        let signature = Array(try privateKey.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation)
        #expect(key.isValidSignature(signature, for: message))
        #expect(!key.isValidSignature(signature, for: message + [0]))
        // PSS is not RS256.
        let pss = Array(try privateKey.signature(for: message, padding: .PSS).rawRepresentation)
        #expect(!key.isValidSignature(pss, for: message))
        #expect(key.coseRepresentation == value)
        #expect(key.subjectPublicKeyInfo == Array(privateKey.publicKey.derRepresentation))
    }

    @Test func refusesAPointNotOnTheCurve() {
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let value: CBORValue = [1: 2, 3: -7, -1: 1, -2: .bytes(one), -3: .bytes(one)]
        #expect(throws: COSEError.pointNotOnCurve) { try COSEKey(coseRepresentation: value) }
    }

    static let coordinate = CBORValue.bytes([UInt8](repeating: 0, count: 32))

    static func key(_ entries: [(CBORValue, CBORValue)]) -> CBORValue {
        .map(Dictionary(entries, uniquingKeysWith: { _, last in last }))
    }

    static let others: [(value: CBORValue, expected: COSEError)] = [
        // OKP on Ed25519 with ES256, EC2 on P-256 with EdDSA: the algorithm must fit the key.
        (key([(1, 1), (3, -7), (-1, 6), (-2, coordinate)]), .unsupportedKey(keyType: 1, curve: 6, algorithm: -7)),
        (
            key([(1, 2), (3, -8), (-1, 1), (-2, coordinate), (-3, coordinate)]),
            .unsupportedKey(keyType: 2, curve: 1, algorithm: -8)
        ),
        // OKP on X25519 (crv 4), a key-agreement key
        (key([(1, 1), (3, -8), (-1, 4), (-2, coordinate)]), .unsupportedKey(keyType: 1, curve: 4, algorithm: -8)),
        // Ed25519 with x too short
        (key([(1, 1), (3, -8), (-1, 6), (-2, .bytes([1, 2, 3]))]), .missingOrInvalidLabel(-2)),
        // RSA with a 1-byte modulus (under 2048 bits), and with no exponent
        (key([(1, 3), (3, -257), (-1, .bytes([1])), (-2, .bytes([1, 0, 1]))]), .pointNotOnCurve),
        (key([(1, 3), (3, -257), (-1, .bytes([1]))]), .missingOrInvalidLabel(-2)),
        // RSA with PS256 (-37)
        (
            key([(1, 3), (3, -37), (-1, .bytes([1])), (-2, .bytes([1, 0, 1]))]),
            .unsupportedKey(keyType: 3, curve: nil, algorithm: -37)
        ),
        // EC2 but curve 2 (P-384) and alg -35 (ES384)
        (
            key([(1, 2), (3, -35), (-1, 2), (-2, coordinate), (-3, coordinate)]),
            .unsupportedKey(keyType: 2, curve: 2, algorithm: -35)
        ),
        // EC2 P-256 but alg missing
        (
            key([(1, 2), (-1, 1), (-2, coordinate), (-3, coordinate)]),
            .unsupportedKey(keyType: 2, curve: 1, algorithm: nil)
        ),
        // kty under a text label
        (
            key([("kty", 2), (3, -7), (-1, 1), (-2, coordinate), (-3, coordinate)]),
            .unsupportedKey(keyType: nil, curve: 1, algorithm: -7)
        ),
        // x too short, y missing, y as text
        (key([(1, 2), (3, -7), (-1, 1), (-2, .bytes([1, 2, 3])), (-3, coordinate)]), .missingOrInvalidLabel(-2)),
        (key([(1, 2), (3, -7), (-1, 1), (-2, coordinate)]), .missingOrInvalidLabel(-3)),
        (key([(1, 2), (3, -7), (-1, 1), (-2, coordinate), (-3, "y")]), .missingOrInvalidLabel(-3)),
        (.array([1, 2, 3]), .notAMap),
    ]

    @Test(arguments: others)
    func refusesOtherKeys(value: CBORValue, expected: COSEError) {
        #expect(throws: expected) { try COSEKey(coseRepresentation: value) }
    }
}
