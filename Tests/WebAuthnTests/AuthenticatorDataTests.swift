import CBOR
import Crypto
import Testing
import WebAuthn

struct AuthenticatorDataTests {
    static let rpIDHash = Array(SHA256.hash(data: Array("example.org".utf8)))
    static let key = COSEKey(publicKey: P256.Signing.PrivateKey().publicKey)
    static let attested = AttestedCredentialData(
        aaguid: AAGUID(bytes: Array(1...16))!, credentialID: Array(repeating: 0xC1, count: 20), publicKey: key)

    /// The full layout: 37 fixed bytes, AAGUID, ID length, ID, COSE key, extensions.
    static func full() -> AuthenticatorData {
        AuthenticatorData(
            relyingPartyIDHash: rpIDHash, flags: [.userPresent, .userVerified], signCount: 0x0102_0304,
            attestedCredentialData: attested, extensions: ["credProtect": 2])
    }

    @Test func buildsTheDocumentedLayout() {
        let data = Self.full()
        let bytes = data.bytes
        #expect(Array(bytes[0..<32]) == Self.rpIDHash)
        #expect(bytes[32] == 0x01 | 0x04 | 0x40 | 0x80)
        #expect(Array(bytes[33..<37]) == [1, 2, 3, 4])
        #expect(Array(bytes[37..<53]) == Array(1...16))
        #expect(Array(bytes[53..<55]) == [0, 20])
        #expect(Array(bytes[55..<75]) == Array(repeating: 0xC1, count: 20))
        let key = Self.key.coseRepresentation.encoded()
        #expect(Array(bytes[75..<(75 + key.count)]) == key)
        let extensions: CBORValue = ["credProtect": 2]
        #expect(Array(bytes[(75 + key.count)...]) == extensions.encoded())
    }

    @Test func roundTrips() throws {
        let built = Self.full()
        let parsed = try AuthenticatorData(bytes: built.bytes)
        #expect(parsed == built)
        #expect(parsed.signCount == 0x0102_0304)
        #expect(parsed.attestedCredentialData == Self.attested)
        #expect(parsed.extensions == ["credProtect": 2])

        let minimal = AuthenticatorData(relyingPartyIDHash: Self.rpIDHash, flags: .userPresent, signCount: 0)
        #expect(minimal.bytes.count == 37)
        #expect(try AuthenticatorData(bytes: minimal.bytes) == minimal)
    }

    /// WebAuthn §6.1 bit positions.
    @Test func flagBits() {
        #expect(AuthenticatorFlags.userPresent.rawValue == 0x01)
        #expect(AuthenticatorFlags.userVerified.rawValue == 0x04)
        #expect(AuthenticatorFlags.backupEligible.rawValue == 0x08)
        #expect(AuthenticatorFlags.backupState.rawValue == 0x10)
        #expect(AuthenticatorFlags.attestedCredentialData.rawValue == 0x40)
        #expect(AuthenticatorFlags.extensionData.rawValue == 0x80)
    }

    /// AT and ED follow what is given, whatever the caller put in `flags`.
    @Test func builderDerivesATAndED() {
        let data = AuthenticatorData(
            relyingPartyIDHash: Self.rpIDHash, flags: [.userPresent, .attestedCredentialData, .extensionData],
            signCount: 1)
        #expect(data.flags == .userPresent)
        #expect(data.bytes[32] == 0x01)
        #expect(Self.full().flags.contains([.attestedCredentialData, .extensionData]))
    }

    /// Every prefix is refused, with the error for where it stops.
    @Test func everyTruncationIsRefused() {
        let bytes = Self.full().bytes
        let keyStart = 75
        let keyEnd = keyStart + Self.key.coseRepresentation.encoded().count
        for length in 0..<bytes.count {
            let result = Result { () throws(AuthenticatorDataError) in
                try AuthenticatorData(bytes: Array(bytes[..<length]))
            }
            guard case .failure(let error) = result else {
                Issue.record("prefix of \(length) bytes was accepted")
                continue
            }
            if length < keyStart {
                #expect(error == .truncated, "length \(length)")
            } else {
                // Inside the COSE key, or at/inside the extensions: the CBOR ends early.
                #expect(error == .invalidCBOR(.unexpectedEnd), "length \(length), key ends at \(keyEnd)")
            }
        }
    }

    @Test func trailingBytesAreRefused() {
        #expect(throws: AuthenticatorDataError.trailingBytes) {
            try AuthenticatorData(bytes: Self.full().bytes + [0])
        }
        let minimal = AuthenticatorData(relyingPartyIDHash: Self.rpIDHash, flags: .userPresent, signCount: 0)
        #expect(throws: AuthenticatorDataError.trailingBytes) { try AuthenticatorData(bytes: minimal.bytes + [0xA0]) }
    }

    /// Flags that disagree with the bytes: AT or ED set without data, or clear with data present.
    @Test func flagMismatchesAreRefused() {
        var bytes = Self.full().bytes
        bytes[32] &= ~0x40  // AT clear, credential data still present
        #expect(throws: AuthenticatorDataError.self) { try AuthenticatorData(bytes: bytes) }

        bytes = Self.full().bytes
        bytes[32] &= ~0x80  // ED clear, extensions still present
        #expect(throws: AuthenticatorDataError.trailingBytes) { try AuthenticatorData(bytes: bytes) }

        var header = AuthenticatorData(relyingPartyIDHash: Self.rpIDHash, flags: .userPresent, signCount: 0).bytes
        header[32] |= 0x40  // AT set, nothing follows
        #expect(throws: AuthenticatorDataError.truncated) { try AuthenticatorData(bytes: header) }
        header[32] = 0x81  // ED set, nothing follows
        #expect(throws: AuthenticatorDataError.invalidCBOR(.unexpectedEnd)) { try AuthenticatorData(bytes: header) }
        header[32] = 0x81
        #expect(throws: AuthenticatorDataError.extensionsNotAMap) { try AuthenticatorData(bytes: header + [0x01]) }
    }

    @Test(arguments: [1023, 1024, 0xFFFF])
    func credentialIDLengthLimit(length: Int) throws {
        let attested = AttestedCredentialData(
            aaguid: .zero, credentialID: Array(repeating: 0xAB, count: length), publicKey: Self.key)
        let built = AuthenticatorData(
            relyingPartyIDHash: Self.rpIDHash, flags: .userPresent, signCount: 0, attestedCredentialData: attested)
        if length <= 1023 {
            #expect(try AuthenticatorData(bytes: built.bytes).attestedCredentialData?.credentialID.count == length)
        } else {
            #expect(throws: AuthenticatorDataError.credentialIDTooLong(length)) {
                try AuthenticatorData(bytes: built.bytes)
            }
        }
    }

    @Test func unsupportedCredentialKeyIsRefused() {
        var bytes = Array(Self.full().bytes[..<75])
        bytes[32] = 0x41
        // An OKP key on X25519 (crv 4): a key-agreement key, not a signing one.
        let okp: CBORValue = [1: 1, 3: -8, -1: 4, -2: .bytes(Array(repeating: 1, count: 32))]
        bytes += okp.encoded()
        #expect(throws: AuthenticatorDataError.invalidPublicKey(.unsupportedKey(keyType: 1, curve: 4, algorithm: -8))) {
            try AuthenticatorData(bytes: bytes)
        }
    }

    @Test func aaguidDescription() {
        #expect(AAGUID(bytes: Array(1...16))?.description == "01020304-0506-0708-090a-0b0c0d0e0f10")
        #expect(AAGUID.zero.description == "00000000-0000-0000-0000-000000000000")
        #expect(AAGUID(bytes: Array(1...15)) == nil)
    }
}
