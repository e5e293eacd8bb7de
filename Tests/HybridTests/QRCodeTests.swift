import Basics
import CBOR
import Crypto
import Hybrid
import TestSupport
import Testing

struct QRCodeTests {
    struct URLVector: Decodable {
        struct Fields: Decodable {
            var publicKey: String
            var secret: String
            var knownDomains: Int
            var timestamp: UInt64
            var stateAssisted: Bool
            var requestType: String

            enum CodingKeys: String, CodingKey {
                case publicKey = "0", secret = "1", knownDomains = "2", timestamp = "3", stateAssisted = "4"
                case requestType = "5"
            }
        }

        var name: String
        var url: String
        var cbor: String
        var fields: Fields
    }

    struct PointVector: Decodable {
        var compressed: String
        var valid: Bool
        var uncompressed: String?
    }

    /// A valid compressed point, for building payloads by hand.
    static let point = [UInt8](hex: "03364c15eec34331d2865757421d497e569e1eba6cff9a69d32e90f19e7f6fd15e")!
    static let secret = [UInt8](repeating: 0x5A, count: 16)

    @Test func realURLsDecodeAndRoundTripByteForByte() throws {
        for vector in try HybridVectors.decodedSection("qr_urls", as: URLVector.self) {
            let payload = try QRCodePayload(url: vector.url)
            #expect(
                payload.compressedPublicKey == (try HybridVectors.hexBytes(vector.fields.publicKey)), "\(vector.name)")
            #expect(payload.secret == (try HybridVectors.hexBytes(vector.fields.secret)))
            #expect(payload.knownDomainCount == vector.fields.knownDomains)
            #expect(payload.timestamp == vector.fields.timestamp)
            #expect(payload.stateAssisted == vector.fields.stateAssisted)
            #expect(payload.requestType == HybridRequestType(rawValue: vector.fields.requestType))
            #expect(payload.cborBytes == (try HybridVectors.hexBytes(vector.cbor)))
            #expect(payload.url == vector.url)
            #expect(try QRCodePayload(cborBytes: HybridVectors.hexBytes(vector.cbor)) == payload)
        }
    }

    @Test(arguments: ["fido:/", "Fido:/", "fIdO:/"])
    func prefixIsMatchedWithoutCase(prefix: String) throws {
        let url = try #require(try HybridVectors.decodedSection("qr_urls", as: URLVector.self).first).url
        let payload = try QRCodePayload(url: prefix + url.dropFirst(6))
        #expect(payload == (try QRCodePayload(url: url)))
        #expect(payload.url == url)  // written with the canonical prefix
    }

    @Test(arguments: ["", "FIDO", "FIDO:", "FIDO:16736865", "FIDQ:/16736865", "https://example.com/", "\u{FF26}IDO:/"])
    func missingPrefixIsRejected(text: String) {
        #expect(throws: QRCodeError.missingPrefix) { try QRCodePayload(url: text) }
    }

    @Test func compressedPointsAreCheckedAgainstTheCurve() throws {
        for vector in try HybridVectors.decodedSection("compressed_points", as: PointVector.self) {
            let compressed = try HybridVectors.hexBytes(vector.compressed)
            let cbor = CBORValue.map([0: .bytes(compressed), 1: .bytes(Self.secret)]).encoded()
            if vector.valid {
                let payload = try QRCodePayload(cborBytes: cbor)
                let uncompressed = try HybridVectors.hexBytes(try #require(vector.uncompressed))
                #expect(payload.uncompressedPublicKey == uncompressed)
                #expect(payload.compressedPublicKey == compressed)
            } else {
                #expect(throws: QRCodeError.publicKeyNotOnCurve) { try QRCodePayload(cborBytes: cbor) }
            }
        }
    }

    static func cbor(_ entries: [CBORValue: CBORValue]) -> [UInt8] { CBORValue.map(entries).encoded() }
    static let key: CBORValue = .bytes(point)
    static let secretValue: CBORValue = .bytes(secret)

    @Test(arguments: [
        (QRCodeTests.cbor([1: QRCodeTests.secretValue]), QRCodeError.missingKey(0)),
        (QRCodeTests.cbor([0: QRCodeTests.key]), .missingKey(1)),
        (QRCodeTests.cbor([0: "QRCodeTests.key", 1: QRCodeTests.secretValue]), .wrongType(key: 0)),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: 7]), .wrongType(key: 1)),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 2: "two"]), .wrongType(key: 2)),
        (
            QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 2: .unsigned(UInt64.max)]),
            .wrongType(key: 2)
        ),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 2: .bool(true)]), .wrongType(key: 2)),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 4: 1]), .wrongType(key: 4)),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 4: .null]), .wrongType(key: 4)),
        (
            QRCodeTests.cbor([0: QRCodeTests.key, 1: QRCodeTests.secretValue, 5: .bytes([0x67, 0x61])]),
            .wrongType(key: 5)
        ),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: .bytes([UInt8](repeating: 1, count: 15))]), .secretWrongLength(15)),
        (QRCodeTests.cbor([0: QRCodeTests.key, 1: .bytes([UInt8](repeating: 1, count: 32))]), .secretWrongLength(32)),
        (
            QRCodeTests.cbor([0: .bytes(Array(QRCodeTests.point.dropLast())), 1: QRCodeTests.secretValue]),
            .publicKeyWrongLength(32)
        ),
        (
            QRCodeTests.cbor([
                0: .bytes([0x04] + QRCodeTests.point.dropFirst() + QRCodeTests.point.dropFirst()),
                1: QRCodeTests.secretValue,
            ]), .publicKeyWrongLength(65)
        ),
        (
            QRCodeTests.cbor([0: .bytes([0x04] + QRCodeTests.point.dropFirst()), 1: QRCodeTests.secretValue]),
            .publicKeyNotOnCurve
        ),
        (
            QRCodeTests.cbor([0: .bytes([0x02] + [UInt8](repeating: 0xFF, count: 32)), 1: QRCodeTests.secretValue]),
            .publicKeyNotOnCurve
        ),
        (CBORValue.array([QRCodeTests.key, QRCodeTests.secretValue]).encoded(), .notAMap),
        ([0xA1, 0x01, 0x40, 0x00], .invalidCBOR(.trailingBytes)),
        ([0xA2, 0x01, 0x40, 0x00, 0x40], .invalidCBOR(.mapKeysOutOfOrder)),
        ([0xA1, 0x18, 0x00, 0x40], .invalidCBOR(.nonMinimalEncoding)),
        ([], .invalidCBOR(.unexpectedEnd)),
    ])
    func malformedPayloadsAreRejected(cbor: [UInt8], expected: QRCodeError) {
        #expect(throws: expected) { try QRCodePayload(cborBytes: cbor) }
        // And the same through a URL.
        #expect(throws: expected) { try QRCodePayload(url: "FIDO:/" + DigitEncoding.encode(cbor)) }
    }

    @Test func badDigitsAreRejected() {
        #expect(throws: QRCodeError.invalidDigits(.invalidRemainderLength(4))) { try QRCodePayload(url: "FIDO:/1234") }
        #expect(throws: QRCodeError.invalidDigits(.invalidCharacter(offset: 1))) { try QRCodePayload(url: "FIDO:/1x3") }
        #expect(throws: QRCodeError.invalidDigits(.chunkOutOfRange(offset: 0))) { try QRCodePayload(url: "FIDO:/999") }
        #expect(throws: QRCodeError.invalidCBOR(.unexpectedEnd)) { try QRCodePayload(url: "FIDO:/") }
    }

    /// Unknown keys (including the disputed key 6) are ignored, and key 3 is ignored unless it is an unsigned integer.
    @Test func unknownKeysAreIgnoredAndNeverWritten() throws {
        let payload = try QRCodePayload(
            cborBytes: Self.cbor([
                0: Self.key, 1: Self.secretValue, 3: -5, 6: [0, 1], 1000: "future", "text key": 1, -1: .null,
            ]))
        #expect(payload.timestamp == nil)
        #expect(payload.knownDomainCount == nil)
        #expect(payload.stateAssisted == nil)
        #expect(payload.requestType == nil)
        #expect(payload.effectiveRequestType == .getAssertion)
        let written = try CBORValue(decoding: payload.cborBytes)
        #expect(written == [0: Self.key, 1: Self.secretValue, 4: false])
    }

    @Test func negativeDomainCountIsKeptAsChromiumDoes() throws {
        let payload = try QRCodePayload(cborBytes: Self.cbor([0: Self.key, 1: Self.secretValue, 2: -1, 4: true]))
        #expect(payload.knownDomainCount == -1)
        #expect(!payload.clientKnows(.google))
        #expect(try QRCodePayload(cborBytes: payload.cborBytes) == payload)
    }

    @Test func freshKeyPairsRoundTrip() throws {
        var random = SeededRandom(seed: 0x0A)
        for (index, type) in [HybridRequestType.getAssertion, .makeCredential, .digitalCredentialPresentation]
            .enumerated()
        {
            let privateKey = P256.KeyAgreement.PrivateKey()
            let secret = random.bytes(16)
            let payload = try QRCodePayload(
                clientKey: privateKey, secret: secret, requestType: type, timestamp: 1_700_000_000 + UInt64(index))
            #expect(payload.uncompressedPublicKey == Array(privateKey.publicKey.x963Representation))
            let parsed = try QRCodePayload(url: payload.url)
            #expect(parsed == payload)
            #expect(parsed.knownDomainCount == 2)
            #expect(parsed.stateAssisted == false)
            #expect(parsed.requestType == type)
            let map = try #require(try CBORValue(decoding: payload.cborBytes).mapValue)
            #expect(Set(map.keys) == [0, 1, 2, 3, 4, 5])
            #expect(payload.url.hasPrefix("FIDO:/"))
            let onlyDigits = payload.url.utf8.dropFirst(6).allSatisfy { (48...57).contains($0) }
            #expect(onlyDigits)
        }
    }

    @Test func secretMustBeSixteenBytes() {
        let key = P256.KeyAgreement.PrivateKey()
        #expect(throws: QRCodeError.secretWrongLength(15)) {
            try QRCodePayload(
                clientKey: key, secret: [UInt8](repeating: 0, count: 15), requestType: .getAssertion, timestamp: 0)
        }
        #expect(throws: QRCodeError.secretWrongLength(0)) { try QRCodePayload(publicKey: key.publicKey, secret: []) }
    }

    @Test func stateAssistedIsAlwaysWritten() throws {
        let key = P256.KeyAgreement.PrivateKey().publicKey
        let absent = try QRCodePayload(publicKey: key, secret: Self.secret)
        #expect(try CBORValue(decoding: absent.cborBytes).mapValue?[4] == false)
        let offered = try QRCodePayload(publicKey: key, secret: Self.secret, stateAssisted: true)
        #expect(try CBORValue(decoding: offered.cborBytes).mapValue?[4] == true)
        #expect(try CBORValue(decoding: offered.cborBytes).mapValue?[6] == nil)
    }

    @Test(arguments: [
        ("ga", HybridRequestType.getAssertion), ("mc", .makeCredential), ("dcp", .digitalCredentialPresentation),
        ("dci", .digitalCredentialIssuance), ("xyz", .getAssertion), ("", .getAssertion), ("MC", .getAssertion),
    ])
    func unknownRequestTypesAreKeptAndReadAsGetAssertion(raw: String, effective: HybridRequestType) throws {
        let payload = try QRCodePayload(cborBytes: Self.cbor([0: Self.key, 1: Self.secretValue, 5: .text(raw)]))
        #expect(payload.requestType?.rawValue == raw)
        #expect(payload.effectiveRequestType == effective)
        #expect(try QRCodePayload(url: payload.url).requestType?.rawValue == raw)
    }

    @Test func clientKnowsAssignedDomainsBelowItsCount() throws {
        let key = P256.KeyAgreement.PrivateKey().publicKey
        let hashed = try TunnelDomain(id: 266)
        let none = try QRCodePayload(publicKey: key, secret: Self.secret)
        #expect(!none.clientKnows(.google) && !none.clientKnows(.apple) && none.clientKnows(hashed))
        let one = try QRCodePayload(publicKey: key, secret: Self.secret, knownDomainCount: 1)
        #expect(one.clientKnows(.google) && !one.clientKnows(.apple))
        let two = try QRCodePayload(publicKey: key, secret: Self.secret, knownDomainCount: 2)
        #expect(two.clientKnows(.google) && two.clientKnows(.apple) && two.clientKnows(hashed))
    }
}
