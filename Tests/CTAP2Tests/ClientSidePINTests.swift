import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

/// The platform's side of the PIN protocols (`PinUvAuthSession`, `PinUvAuthToken`, getPINRetries) and of getInfo
/// (`AuthenticatorInfo`): python-fido2's known answers, then against this package's authenticator.
struct ClientSidePINTests {
    typealias Vector = PinUvAuthProtocolVectorTests.Vector
    static func hex(_ text: String) -> [UInt8] { [UInt8](hex: text)! }

    /// The authenticator's getKeyAgreement answer carrying `key`.
    static func keyAgreementAnswer(_ key: P256.KeyAgreement.PublicKey) -> [UInt8] {
        [0] + CBORValue.map([1: PinUvAuthProtocol.coseKey(key)]).encoded()
    }

    @Test(arguments: PinUvAuthProtocolVectorTests.vectors)
    func theTokenRequestAndTheParamMatchPythonFido2(vector: Vector) throws {
        let pinProtocol = PinUvAuthProtocol(rawValue: vector.protocol_)
        let authenticatorKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: Self.hex(vector.authenticator_private_key))
        let platformKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.hex(vector.platform_private_key))
        let session = try PinUvAuthSession(
            pinUvAuthProtocol: pinProtocol, keyAgreementResponse: Self.keyAgreementAnswer(authenticatorKey.publicKey),
            platformKey: platformKey)
        #expect(session.keyAgreement == PinUvAuthProtocol.coseKey(platformKey.publicKey))
        #expect(try PinUvAuthSession.pinHash(vector.pin) == Self.hex(vector.pin_hash))

        let message = try session.pinTokenMessage(
            pin: vector.pin, permissions: [.makeCredential, .getAssertion], relyingPartyID: "example.com",
            iv: Self.hex(vector.iv))
        #expect(message.first == 0x06)
        let parameters = try #require(try CBORValue(decoding: Array(message.dropFirst())).mapValue)
        #expect(
            parameters == [
                1: .int(vector.protocol_), 2: 9, 3: session.keyAgreement, 6: .bytes(Self.hex(vector.pin_hash_enc)),
                9: 3, 10: "example.com",
            ])

        let legacy = try session.pinTokenMessage(
            pin: vector.pin, permissions: nil, relyingPartyID: "x", iv: Self.hex(vector.iv))
        #expect(
            try CBORValue(decoding: Array(legacy.dropFirst())).mapValue == [
                1: .int(vector.protocol_), 2: 5, 3: session.keyAgreement, 6: .bytes(Self.hex(vector.pin_hash_enc)),
            ])

        let token = try session.token(from: [0] + CBORValue.map([2: .bytes(Self.hex(vector.token_enc))]).encoded())
        #expect(token.pinUvAuthProtocol == pinProtocol)
        #expect(token.authenticate(Self.hex(vector.client_data_hash)) == Self.hex(vector.token_param))
        // The token stays out of descriptions and dumps.
        var dumped = ""
        dump(token, to: &dumped)
        for text in ["\(token)", dumped, "\(session)"] {
            #expect(!text.contains(vector.token) && !text.contains(Self.hex(vector.token).hexString))
        }
    }

    @Test func pinsAreHashedAfterNormalizationAndImpossibleOnesRefusedBeforeSending() throws {
        // "é" composed (U+00E9) and decomposed (e, U+0301) are one PIN.
        #expect(try PinUvAuthSession.pinHash("caf\u{E9}1") == PinUvAuthSession.pinHash("cafe\u{301}1"))
        #expect(
            try PinUvAuthSession.pinHash("caf\u{E9}1")
                == Array(SHA256.hash(data: Array("caf\u{E9}1".utf8)).bytes.prefix(16)))
        for impossible in ["", "123", "ü¢€", String(repeating: "9", count: 64)] {
            #expect(throws: CTAPError.pinPolicyViolation) { try PinUvAuthSession.pinHash(impossible) }
        }
        #expect(try PinUvAuthSession.pinHash(String(repeating: "9", count: 63)).count == 16)
    }

    @Test func badKeyAgreementAnswersAreRefused() throws {
        let platformKey = P256.KeyAgreement.PrivateKey()
        let good = PinUvAuthProtocol.coseKey(P256.KeyAgreement.PrivateKey().publicKey)
        var offCurve = good.mapValue!
        offCurve[-3] = .bytes([UInt8](repeating: 7, count: 32))
        let cases: [([UInt8], CTAPError)] = [
            ([0x31], .pinInvalid),
            ([], .invalidLength),
            ([0], .invalidLength),
            ([0] + CBORValue.array([1]).encoded(), .cborUnexpectedType),
            ([0] + CBORValue.map([2: good]).encoded(), .missingParameter),
            ([0] + CBORValue.map([1: .map(offCurve)]).encoded(), .invalidParameter),
            ([0] + CBORValue.map([1: 5]).encoded(), .invalidParameter),
            ([0, 0xA1, 0x01], .invalidCBOR),
        ]
        for (answer, expected) in cases {
            #expect(throws: expected) {
                try PinUvAuthSession(pinUvAuthProtocol: .two, keyAgreementResponse: answer, platformKey: platformKey)
            }
        }
        #expect(throws: CTAPError.invalidParameter) {
            try PinUvAuthSession(
                pinUvAuthProtocol: PinUvAuthProtocol(rawValue: 3),
                keyAgreementResponse: [0] + CBORValue.map([1: good]).encoded(),
                platformKey: platformKey)
        }
    }

    @Test(arguments: [PinUvAuthProtocol.one, .two])
    func tokensOfImpossibleLengthsAreRefused(pinProtocol: PinUvAuthProtocol) throws {
        let authenticatorKey = P256.KeyAgreement.PrivateKey()
        let platformKey = P256.KeyAgreement.PrivateKey()
        let session = try PinUvAuthSession(
            pinUvAuthProtocol: pinProtocol, keyAgreementResponse: Self.keyAgreementAnswer(authenticatorKey.publicKey),
            platformKey: platformKey)
        let shared = try pinProtocol.sharedSecret(
            privateKey: authenticatorKey, platformKey: PinUvAuthProtocol.coseKey(platformKey.publicKey))
        func answer(_ token: [UInt8]) throws -> [UInt8] {
            let encrypted = try pinProtocol.encrypt(key: shared, plaintext: token, iv: [UInt8](repeating: 3, count: 16))
            return [0] + CBORValue.map([2: .bytes(encrypted)]).encoded()
        }
        #expect(try session.token(from: answer([UInt8](repeating: 1, count: 32))).pinUvAuthProtocol == pinProtocol)
        if pinProtocol == .two {
            #expect(throws: CTAPError.invalidLength) {
                try session.token(from: answer([UInt8](repeating: 1, count: 16)))
            }
        } else {
            #expect(try session.token(from: answer([UInt8](repeating: 1, count: 16))).pinUvAuthProtocol == .one)
        }
        #expect(throws: CTAPError.invalidLength) {
            try session.token(from: [0] + CBORValue.map([2: .bytes([1, 2, 3])]).encoded())
        }
        #expect(throws: CTAPError.pinAuthBlocked) { try session.token(from: [0x34]) }
    }

    @Test func pinRetriesAreRead() throws {
        #expect(try CTAPClient.pinRetries(from: [0] + CBORValue.map([3: 5, 4: false]).encoded()) == (5, false))
        #expect(try CTAPClient.pinRetries(from: [0] + CBORValue.map([3: 8]).encoded()) == (8, nil))
        #expect(throws: CTAPError.missingParameter) { try CTAPClient.pinRetries(from: [0, 0xA0]) }
        #expect(throws: CTAPError.cborUnexpectedType) {
            try CTAPClient.pinRetries(from: [0] + CBORValue.map([3: "8"]).encoded())
        }
        #expect(throws: CTAPError.invalidParameter) {
            try CTAPClient.pinRetries(from: [0] + CBORValue.map([3: -1]).encoded())
        }
        #expect(CTAPClient.getPINRetriesMessage(pinUvAuthProtocol: .one) == [0x06, 0xA2, 0x01, 0x01, 0x02, 0x01])
    }
}

/// The client side against this package's authenticator: a PIN set by the test double becomes a token that signs a
/// makeCredential the authenticator accepts.
struct ClientSidePINAgainstTheAuthenticatorTests {
    @Test(arguments: [PinUvAuthProtocol.one, .two])
    func aTokenFromThePINSignsAMakeCredential(pinProtocol: PinUvAuthProtocol) async throws {
        let harness = Harness(answers: [.approved(userVerified: false, selectedAccount: nil)])
        #expect(try await PlatformDouble(harness: harness, pinProtocol: pinProtocol).setPIN("4321") == 0)
        let info = try AuthenticatorInfo(ctapResponse: await harness.sendRaw([0x04]))
        #expect(info.clientPIN == true && info.supportsPermissionTokens)
        #expect(info.preferredPinUvAuthProtocol == .two)

        let session = try PinUvAuthSession(
            pinUvAuthProtocol: pinProtocol,
            keyAgreementResponse: await harness.sendRaw(
                CTAPClient.getKeyAgreementMessage(pinUvAuthProtocol: pinProtocol)),
            platformKey: P256.KeyAgreement.PrivateKey())
        let wrong = await harness.sendRaw(
            try session.pinTokenMessage(
                pin: "1111", permissions: .makeCredential, relyingPartyID: "example.com",
                iv: [UInt8](repeating: 9, count: 16)))
        #expect(throws: CTAPError.pinInvalid) { try session.token(from: wrong) }
        #expect(
            try CTAPClient.pinRetries(
                from: await harness.sendRaw(CTAPClient.getPINRetriesMessage(pinUvAuthProtocol: pinProtocol))
            ).retries == 7)

        // A wrong PIN replaced the key agreement key: a new session.
        let again = try PinUvAuthSession(
            pinUvAuthProtocol: pinProtocol,
            keyAgreementResponse: await harness.sendRaw(
                CTAPClient.getKeyAgreementMessage(pinUvAuthProtocol: pinProtocol)),
            platformKey: P256.KeyAgreement.PrivateKey())
        let token = try again.token(
            from: await harness.sendRaw(
                try again.pinTokenMessage(
                    pin: "4321", permissions: .makeCredential, relyingPartyID: "example.com",
                    iv: [UInt8](repeating: 9, count: 16))))
        let clientDataHash = [UInt8](repeating: 0x42, count: 32)
        var parameters = try #require(
            try CBORValue(
                decoding: Array(
                    CTAPClient.makeCredentialMessage(
                        clientDataHash: clientDataHash, relyingPartyID: "example.com", relyingPartyName: nil,
                        userHandle: [1], userName: "alice", userDisplayName: nil, userVerification: false
                    ).dropFirst())
            ).mapValue)
        parameters[8] = .bytes(token.authenticate(clientDataHash))
        parameters[9] = .int(pinProtocol.rawValue)
        let response = await harness.sendRaw([0x01] + CBORValue.map(parameters).encoded())
        #expect(response.first == 0)
        let made = try MakeCredentialResponse(ctapResponse: response)
        #expect(made.attestationObject.authenticatorData.flags.contains(.userVerified))
    }

    @Test func getInfoIsReadForEveryRole() async throws {
        let key = try AuthenticatorInfo(ctapResponse: await Harness(configuration: .securityKey).sendRaw([0x04]))
        #expect(key.versions == ["FIDO_2_0", "FIDO_2_1"])
        #expect(key.aaguid == AuthenticatorConfiguration.securityKey.aaguid.bytes)
        #expect(key.hasBuiltInUserVerification && key.clientPIN == false && key.supportsPermissionTokens)
        #expect(key.pinUvAuthProtocols == [.two, .one] && key.transports == ["usb"])
        #expect(key.makesCredentialsWithoutUserVerification && !key.alwaysRequiresUserVerification)

        let pinOnly = try AuthenticatorInfo(
            ctapResponse: await Harness(configuration: .pinOnlySecurityKey).sendRaw([0x04]))
        #expect(!pinOnly.hasBuiltInUserVerification && pinOnly.options["uv"] == nil && pinOnly.clientPIN == false)
    }

    @Test func hostileGetInfoAnswersAreRefused() throws {
        let aaguid = CBORValue.bytes([UInt8](repeating: 1, count: 16))
        let cases: [(CBORValue, CTAPError)] = [
            ([3: aaguid], .missingParameter),
            ([1: ["FIDO_2_0"]], .missingParameter),
            ([1: "FIDO_2_0", 3: aaguid], .cborUnexpectedType),
            ([1: [1], 3: aaguid], .cborUnexpectedType),
            ([1: ["FIDO_2_0"], 3: .bytes([1, 2])], .invalidLength),
            ([1: ["FIDO_2_0"], 3: aaguid, 4: [1, 2]], .cborUnexpectedType),
            ([1: ["FIDO_2_0"], 3: aaguid, 6: [2, "1"]], .cborUnexpectedType),
            ([1: ["FIDO_2_0"], 3: aaguid, 5: -1, 0x0C: 3], .cborUnexpectedType),
        ]
        for (body, expected) in cases {
            #expect(throws: expected, "\(body)") { try AuthenticatorInfo(ctapResponse: [0] + body.encoded()) }
        }
        // Options that are not booleans, and unknown keys, are ignored; so is non-canonical order.
        let info = try AuthenticatorInfo(
            cbor: [1: ["FIDO_2_0"], 3: aaguid, 4: ["rk": true, "weird": 1, 7: true], 99: "x"])
        #expect(info.options == ["rk": true])
        #expect(info.preferredPinUvAuthProtocol == .one)  // a CTAP 2.0 key listing no protocol
        let unordered: [UInt8] =
            [0, 0xA2, 0x03, 0x50] + [UInt8](repeating: 1, count: 16) + [0x01, 0x81, 0x68] + Array("FIDO_2_0".utf8)
        #expect(try AuthenticatorInfo(ctapResponse: unordered).versions == ["FIDO_2_0"])
        #expect(throws: CTAPError.invalidCommand) { try AuthenticatorInfo(ctapResponse: [0x01]) }
        let future = try AuthenticatorInfo(cbor: [1: ["FIDO_2_2"], 3: aaguid, 6: [3]])
        #expect(future.preferredPinUvAuthProtocol == nil)
    }
}
