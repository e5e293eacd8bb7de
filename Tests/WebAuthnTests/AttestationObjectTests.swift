import Basics
import CBOR
import Crypto
import Testing
import WebAuthn

struct AttestationObjectTests {
    /// The attestation object of the W3C WebAuthn Level 3 test vector "ES256 Credential with No
    /// Attestation" (§16, #sctn-test-vectors-none-es256).
    static let specNoneHex =
        "a363666d74646e6f6e656761747453746d74a068617574684461746158a4bfabc37432958b063360d3ad6461c9c4735a"
        + "e7f8edd46592a5e0f01452b2e4b559000000008446ccb9ab1db374750b2367ff6f3a1f0020f91f391db4c9b2fde0ea70"
        + "189cba3fb63f579ba6122b33ad94ff3ec330084be4a5010203262001215820afefa16f97ca9b2d23eb86ccb64098d20d"
        + "b90856062eb249c33a9b672f26df61225820930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b"
        + "9220"

    @Test func parsesTheSpecVectorAndReencodesItExactly() throws {
        let bytes = try #require([UInt8](hex: Self.specNoneHex))
        let object = try AttestationObject(bytes: bytes)
        #expect(object.format == "none")
        #expect(object.statement == [:])
        let data = object.authenticatorData
        #expect(data.relyingPartyIDHash == Array(SHA256.hash(data: Array("example.org".utf8))))
        #expect(data.flags == [.userPresent, .backupEligible, .backupState, .attestedCredentialData])
        #expect(data.signCount == 0)
        #expect(data.attestedCredentialData?.aaguid.description == "8446ccb9-ab1d-b374-750b-2367ff6f3a1f")
        #expect(
            data.attestedCredentialData?.credentialID.hexString
                == "f91f391db4c9b2fde0ea70189cba3fb63f579ba6122b33ad94ff3ec330084be4")
        #expect(object.bytes == bytes)
    }

    @Test func roundTripsAPackedObject() throws {
        let key = COSEKey(publicKey: P256.Signing.PrivateKey().publicKey)
        let data = AuthenticatorData(
            relyingPartyIDHash: Array(repeating: 9, count: 32), flags: .userPresent, signCount: 3,
            attestedCredentialData: AttestedCredentialData(aaguid: .zero, credentialID: [1, 2, 3], publicKey: key))
        let object = AttestationObject(
            format: "packed", statement: ["alg": -7, "sig": .bytes([0x30, 0x00])], authenticatorData: data)
        let parsed = try AttestationObject(bytes: object.bytes)
        #expect(parsed == object)
        // Canonical key order: fmt (3), attStmt (7), authData (8).
        #expect(Array(object.bytes.prefix(5)).hexString == "a363666d74")
    }

    static let data = AuthenticatorData(relyingPartyIDHash: Array(repeating: 0, count: 32), flags: [], signCount: 0)

    static func object(_ entries: [(CBORValue, CBORValue)]) -> CBORValue {
        .map(Dictionary(entries, uniquingKeysWith: { _, last in last }))
    }

    static let authData = CBORValue.bytes(data.bytes)
    static let malformed: [(value: CBORValue, reason: String)] = [
        (.array([1, 2]), "attestation object is not a map"),
        (object([("attStmt", [:]), ("authData", authData)]), "fmt is missing or not text"),
        (object([("fmt", 1), ("attStmt", [:]), ("authData", authData)]), "fmt is missing or not text"),
        (object([("fmt", "none"), ("authData", authData)]), "attStmt is missing or not a map"),
        (object([("fmt", "none"), ("attStmt", []), ("authData", authData)]), "attStmt is missing or not a map"),
        (object([("fmt", "none"), ("attStmt", [:])]), "authData is missing or not bytes"),
        (object([("fmt", "none"), ("attStmt", [:]), ("authData", "text")]), "authData is missing or not bytes"),
    ]

    @Test(arguments: malformed)
    func refusesMalformedStructure(value: CBORValue, reason: String) {
        #expect(throws: AttestationObjectError.malformed(reason)) { try AttestationObject(bytes: value.encoded()) }
    }

    @Test func refusesBadAuthenticatorDataAndBadCBOR() {
        let short: CBORValue = ["fmt": "none", "attStmt": [:], "authData": .bytes([1, 2, 3])]
        #expect(throws: AttestationObjectError.invalidAuthenticatorData(.truncated)) {
            try AttestationObject(bytes: short.encoded())
        }
        #expect(throws: AttestationObjectError.invalidCBOR(.unexpectedEnd)) { try AttestationObject(bytes: [0xA3]) }
        #expect(throws: AttestationObjectError.invalidCBOR(.trailingBytes)) {
            try AttestationObject(
                bytes: AttestationObject(format: "none", statement: [:], authenticatorData: Self.data).bytes + [0])
        }
    }

    /// The strict decoder refuses the fmt, authData, attStmt key order some authenticators send
    /// (go-webauthn's Feitian vector has it): a documented limitation, not a crash.
    @Test func refusesNonCanonicalKeyOrder() {
        var bytes: [UInt8] = [0xA3]
        CBORValue.text("fmt").encode(into: &bytes)
        CBORValue.text("none").encode(into: &bytes)
        CBORValue.text("authData").encode(into: &bytes)
        CBORValue.bytes(Self.data.bytes).encode(into: &bytes)
        CBORValue.text("attStmt").encode(into: &bytes)
        CBORValue.map([:]).encode(into: &bytes)
        #expect(throws: AttestationObjectError.invalidCBOR(.mapKeysOutOfOrder)) { try AttestationObject(bytes: bytes) }
    }
}
