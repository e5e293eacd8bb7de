import Basics
import CBOR
import Crypto
import Foundation
import RelyingParty
import Testing
import WebAuthn

struct RecordAndOptionsTests {
    static func record() -> CredentialRecord {
        CredentialRecord(
            id: [0xFB, 0xFF, 0x01], publicKey: COSEKey(publicKey: P256.Signing.PrivateKey().publicKey), signCount: 42,
            backupEligible: true, backupState: false, uvInitialized: true, userHandle: Array("user-1".utf8),
            aaguid: AAGUID(bytes: Array(0..<16))!, attestationFormat: "packed", attestationType: .basicOrAttCA,
            transports: ["usb", "nfc"])
    }

    @Test func recordRoundTripsThroughJSON() throws {
        let record = Self.record()
        let json = try JSONEncoder().encode(record)
        #expect(try JSONDecoder().decode(CredentialRecord.self, from: json) == record)

        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["id"] as? String == "-_8B")
        #expect(object["userHandle"] as? String == "dXNlci0x")
        #expect(object["aaguid"] as? String == "00010203-0405-0607-0809-0a0b0c0d0e0f")
        #expect(object["attestationType"] as? String == "basicOrAttCA")
        #expect((object["signCount"] as? NSNumber)?.intValue == 42)
        let keyText = try #require(object["publicKey"] as? String)
        let key = try #require([UInt8](base64URLEncoded: keyText))
        #expect(key == record.publicKey.coseRepresentation.encoded())
    }

    @Test func recordWithoutUserHandleOrTransports() throws {
        var record = Self.record()
        record.userHandle = nil
        let json = try JSONEncoder().encode(record)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["userHandle"] == nil)
        var trimmed = object
        trimmed["transports"] = nil
        let reread = try JSONDecoder().decode(
            CredentialRecord.self, from: try JSONSerialization.data(withJSONObject: trimmed))
        #expect(reread.userHandle == nil)
        #expect(reread.transports.isEmpty)
    }

    @Test(arguments: [
        ("publicKey", "pQECAyYgASFYIA"),  // truncated COSE key
        ("publicKey", "not base64!"), ("id", "a=b"), ("aaguid", "00010203-0405-0607-0809"),
        ("attestationType", "basic"),
    ])
    func recordRefusesBadFields(field: String, value: String) throws {
        let json = try JSONEncoder().encode(Self.record())
        var object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        object[field] = value
        let damaged = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CredentialRecord.self, from: damaged) }
    }

    @Test func aaguidStringForm() {
        let aaguid = AAGUID(bytes: Array(0..<16))!
        #expect(AAGUID(string: aaguid.description) == aaguid)
        #expect(AAGUID(string: "00010203-0405-0607-0809-0A0B0C0D0E0F") == aaguid)
        #expect(AAGUID(string: "000102030405060708090a0b0c0d0e0f") == nil)
        #expect(AAGUID(string: "0001020-30405-0607-0809-0a0b0c0d0e0f") == nil)
        #expect(AAGUID(string: "00010203-0405-0607-0809-0a0b0c0d0e0g") == nil)
    }

    @Test func creationOptionsJSON() throws {
        let options = RegistrationOptions(
            challenge: [0xFB, 0xFF], user: UserEntity(id: [1, 2, 3], name: "alice"), userVerification: .required,
            residentKey: .required, attestation: .direct, excludeCredentials: [[9, 9]], timeout: 60000)
        let bytes = options.json(relyingParty: RelyingPartyEntity(id: "example.org", name: "Example"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["challenge"] as? String == "-_8")
        #expect(object["rp"] as? [String: String] == ["id": "example.org", "name": "Example"])
        #expect(object["user"] as? [String: String] == ["id": "AQID", "name": "alice", "displayName": "alice"])
        let parameters = try #require(object["pubKeyCredParams"] as? [[String: Any]])
        #expect(parameters.count == 1)
        #expect(parameters.first?["type"] as? String == "public-key")
        #expect((parameters.first?["alg"] as? NSNumber)?.intValue == -7)
        #expect(object["excludeCredentials"] as? [[String: String]] == [["type": "public-key", "id": "CQk"]])
        let selection = try #require(object["authenticatorSelection"] as? [String: Any])
        #expect(selection["residentKey"] as? String == "required")
        #expect(selection["requireResidentKey"] as? Bool == true)
        #expect(selection["userVerification"] as? String == "required")
        #expect(object["attestation"] as? String == "direct")
        #expect((object["timeout"] as? NSNumber)?.intValue == 60000)
        // Sorted keys make the bytes stable.
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"attestation":"direct","authenticatorSelection":"#))
    }

    @Test func requestOptionsJSON() throws {
        let options = AuthenticationOptions(challenge: [1], allowCredentials: [[2]], userVerification: .discouraged)
        let bytes = options.json(relyingPartyID: "example.org")
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"allowCredentials":[{"id":"Ag","type":"public-key"}],"challenge":"AQ","rpId":"example.org","userVerification":"discouraged"}"#
        )
    }
}

/// The relying party state file's format, shared by `passkey client --rp-state` and `passkey rp serve`.
struct RelyingPartyStateTests {
    static let golden = """
        {
          "accounts" : [
            {
              "credential" : {
                "aaguid" : "00010203-0405-0607-0809-0a0b0c0d0e0f",
                "attestationFormat" : "none",
                "attestationType" : "none",
                "backupEligible" : true,
                "backupState" : true,
                "id" : "-_8B",
                "publicKey" : "pQECAyYgASFYIGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWIlggT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU",
                "signCount" : 0,
                "transports" : [
                  "usb",
                  "hybrid"
                ],
                "userHandle" : "dXNlci0x",
                "uvInitialized" : true
              },
              "registered" : "2027-01-15T08:00:00Z",
              "rpID" : "localhost",
              "userName" : "alice"
            }
          ],
          "version" : 1
        }
        """

    static func state() throws -> RelyingPartyState {
        // The P-256 generator point: a fixed, valid public key.
        let point = try #require(
            [UInt8](
                hex: "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                    + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"))
        var state = RelyingPartyState()
        state.add(
            RelyingPartyState.Account(
                rpID: "localhost", userName: "alice", registered: Date(timeIntervalSince1970: 1_800_000_000),
                credential: CredentialRecord(
                    id: [0xFB, 0xFF, 0x01],
                    publicKey: COSEKey(publicKey: try P256.Signing.PublicKey(rawRepresentation: point)), signCount: 0,
                    backupEligible: true, backupState: true, uvInitialized: true, userHandle: Array("user-1".utf8),
                    aaguid: AAGUID(bytes: Array(0..<16))!, transports: ["usb", "hybrid"])))
        return state
    }

    @Test func theFileFormatIsPinned() throws {
        let state = try Self.state()
        #expect(String(decoding: try state.jsonData(), as: UTF8.self) == Self.golden)
        #expect(try RelyingPartyState(jsonData: Data(Self.golden.utf8), source: "golden") == state)
    }

    @Test func unreadableStatesAreRefusedWithTheirCode() {
        #expect(throws: RelyingPartyStateError(.invalid, "")) {
            try RelyingPartyState(jsonData: Data("{}".utf8), source: "x")
        }
        #expect(throws: RelyingPartyStateError(.unsupportedVersion, "")) {
            try RelyingPartyState(jsonData: Data(#"{"version": 2, "accounts": []}"#.utf8), source: "x")
        }
        #expect(throws: RelyingPartyStateError(.tooLarge, "")) {
            try RelyingPartyState(jsonData: Data(count: RelyingPartyState.maximumFileSize + 1), source: "x")
        }
    }

    @Test func hintsAreInTheOptionsJSONOnlyWhenThereAreAny() throws {
        let user = UserEntity(id: [1], name: "alice")
        let creation = RegistrationOptions(challenge: [1], user: user, hints: ["security-key", "hybrid"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(creation.json(relyingParty: RelyingPartyEntity(id: "a.test"))))
                as? [String: Any])
        #expect(object["hints"] as? [String] == ["security-key", "hybrid"])
        #expect(
            !String(
                decoding: RegistrationOptions(challenge: [1], user: user).json(relyingParty: .init(id: "a.test")),
                as: UTF8.self
            )
            .contains("hints"))
        #expect(
            String(
                decoding: AuthenticationOptions(challenge: [1], hints: ["client-device"]).json(
                    relyingPartyID: "a.test"), as: UTF8.self)
                == #"{"allowCredentials":[],"challenge":"AQ","hints":["client-device"],"rpId":"a.test","userVerification":"preferred"}"#
        )
    }
}
