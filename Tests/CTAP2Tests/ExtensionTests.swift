import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

struct CredProtectTests {
    /// Registers a discoverable credential with the given credProtect level; returns its ID.
    static func register(_ harness: Harness, level: Int, userID: [UInt8]) async throws -> [UInt8] {
        let (status, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: userID, extra: [6: ["credProtect": .int(level)]]))
        try #require(status == 0)
        let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        #expect(authData.extensions == ["credProtect": .int(level)])
        return try #require(authData.attestedCredentialData).credentialID
    }

    @Test func levelsAreEnforcedOnDiscoveryAndAllowList() async throws {
        let harness = Harness()
        let one = try await Self.register(harness, level: 1, userID: [1])
        let two = try await Self.register(harness, level: 2, userID: [2])
        let three = try await Self.register(harness, level: 3, userID: [3])
        #expect(try harness.store.credential(id: three)?.credentialProtection == .userVerificationRequired)

        // Without UV: discovery finds level 1 only; an allowList reaches levels 1 and 2.
        let discovered = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(discovered.body?[1]?["id"] == .bytes(one))
        #expect(discovered.body?[5] == nil)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [two])).status == 0)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [three])).status == 0x2E)
        // With UV: all three.
        let verified = try await harness.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true]))
        #expect(verified.body?[5] == 3)
        #expect(
            try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [three], options: ["uv": true]))
                .status == 0)
        // A level 3 credential in an excludeList does not exist for a request without UV.
        let excluded = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [4], options: nil, excludeList: [three]))
        #expect(excluded.status == 0)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [5], excludeList: [three])).status
                == 0x19)
    }

    @Test(arguments: [0, 4, -1]) func unknownLevelsAreRefused(level: Int) async throws {
        let harness = Harness()
        let status = try await harness.send(
            .makeCredential, Fixtures.makeCredential(extra: [6: ["credProtect": .int(level)]])
        ).status
        #expect(status == 0x02)
        #expect(try harness.store.allCredentials().isEmpty)
    }
}

struct HMACSecretTests {
    /// The platform's hmac-secret input for `salts` (CTAP 2.1 §12.5), and the shared secret to read the output.
    static func input(_ harness: Harness, _ salts: [UInt8], pinProtocol: PinUvAuthProtocol) async throws -> (
        CBORValue, [UInt8]
    ) {
        let platform = PlatformDouble(harness: harness, pinProtocol: pinProtocol)
        let (keyAgreement, shared) = try await platform.encapsulate()
        let saltEnc = try platform.encrypt(shared, salts)
        var map: [CBORValue: CBORValue] = [
            1: keyAgreement, 2: .bytes(saltEnc), 3: .bytes(pinProtocol.authenticate(key: shared, message: saltEnc)),
        ]
        if pinProtocol != .one { map[4] = .int(pinProtocol.rawValue) }
        return (.map(map), shared)
    }

    static func output(
        _ body: CBORValue?, shared: [UInt8], pinProtocol: PinUvAuthProtocol, name: String = "hmac-secret"
    ) throws -> [UInt8] {
        let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        let encrypted = try #require(authData.extensions?[.text(name)]?.bytesValue)
        return try pinProtocol.decrypt(key: shared, ciphertext: encrypted)
    }

    /// hmac-secret-mc (CTAP 2.2): makeCredential evaluates the PRF at once, with the CredRandom its UV flag says, and
    /// a later getAssertion with the same salt and UV gives the same output.
    @Test(arguments: ClientPINTests.protocols, [true, false]) func evaluatedAtRegistrationAsAtAssertion(
        pinProtocol: PinUvAuthProtocol, uv: Bool
    ) async throws {
        let harness = Harness()
        let salts = [UInt8](repeating: 7, count: 32) + [UInt8](repeating: 8, count: 32)
        let (input, shared) = try await Self.input(harness, salts, pinProtocol: pinProtocol)
        // Not discoverable, so `uv: false` makes it without verification (makeCredUvNotRqd).
        let made = try await harness.send(
            .makeCredential,
            Fixtures.makeCredential(
                options: ["uv": .bool(uv)], extra: [6: ["hmac-secret": true, "hmac-secret-mc": input]]))
        try #require(made.status == 0)
        let authData = try AuthenticatorData(bytes: try #require(made.body?[2]?.bytesValue))
        let credentialID = try #require(authData.attestedCredentialData?.credentialID)
        #expect(authData.flags.contains(.userVerified) == uv)
        #expect(authData.extensions?["hmac-secret"] == true)
        let atRegistration = try Self.output(
            made.body, shared: shared, pinProtocol: pinProtocol, name: "hmac-secret-mc")
        #expect(atRegistration.count == 64)

        let (assertionInput, assertionShared) = try await Self.input(harness, salts, pinProtocol: pinProtocol)
        let (status, body) = try await harness.send(
            .getAssertion,
            Fixtures.getAssertion(
                allowList: [credentialID], options: ["uv": .bool(uv)], extra: [4: ["hmac-secret": assertionInput]]))
        try #require(status == 0)
        #expect(try Self.output(body, shared: assertionShared, pinProtocol: pinProtocol) == atRegistration)
    }

    /// hmac-secret-mc without `"hmac-secret": true` is ignored; with a bad saltAuth it is refused before anyone is
    /// asked and nothing is stored.
    @Test func registrationInputWithoutHMACSecretOrWithABadMACIsNotEvaluated() async throws {
        let harness = Harness()
        let (input, _) = try await Self.input(harness, [UInt8](repeating: 1, count: 32), pinProtocol: .two)
        let alone = try await harness.send(
            .makeCredential, Fixtures.makeCredential(extra: [6: ["hmac-secret-mc": input]]))
        try #require(alone.status == 0)
        #expect(try AuthenticatorData(bytes: try #require(alone.body?[2]?.bytesValue)).extensions == nil)

        var badAuth = try #require(input.mapValue)
        badAuth[3] = .bytes([UInt8](repeating: 0, count: 32))
        let asked = harness.user.requests.count
        let refused = try await harness.send(
            .makeCredential,
            Fixtures.makeCredential(
                userID: [9], extra: [6: ["hmac-secret": true, "hmac-secret-mc": .map(badAuth)]]))
        #expect(refused.status == 0x33)
        #expect(harness.user.requests.count == asked)
        #expect(try harness.store.allCredentials().count == 1)
    }

    @Test(arguments: ClientPINTests.protocols) func outputsAreStablePerCredentialAndDependOnUV(
        pinProtocol: PinUvAuthProtocol
    ) async throws {
        let harness = Harness()
        let made = try await harness.send(.makeCredential, Fixtures.makeCredential(extra: [6: ["hmac-secret": true]]))
        #expect(
            try AuthenticatorData(bytes: try #require(made.body?[2]?.bytesValue)).extensions == ["hmac-secret": true])
        let salt1 = [UInt8](repeating: 1, count: 32)
        let salt2 = [UInt8](repeating: 2, count: 32)

        func evaluate(_ salts: [UInt8], uv: Bool) async throws -> [UInt8] {
            let (input, shared) = try await Self.input(harness, salts, pinProtocol: pinProtocol)
            let (status, body) = try await harness.send(
                .getAssertion, Fixtures.getAssertion(options: ["uv": .bool(uv)], extra: [4: ["hmac-secret": input]]))
            try #require(status == 0)
            return try Self.output(body, shared: shared, pinProtocol: pinProtocol)
        }
        let both = try await evaluate(salt1 + salt2, uv: true)
        #expect(both.count == 64)
        #expect(try await evaluate(salt1, uv: true) == Array(both.prefix(32)))
        #expect(try await evaluate(salt2 + salt1, uv: true) == Array(both.suffix(32)) + Array(both.prefix(32)))
        let withoutUV = try await evaluate(salt1, uv: false)
        #expect(withoutUV.count == 32 && withoutUV != Array(both.prefix(32)))
    }

    @Test func badInputsAreRefused() async throws {
        let harness = Harness()
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential(extra: [6: ["hmac-secret": true]]))
        let (input, _) = try await Self.input(harness, [UInt8](repeating: 1, count: 32), pinProtocol: .two)
        var badAuth = input.mapValue!
        badAuth[3] = .bytes([UInt8](repeating: 0, count: 32))
        var badSalt = input.mapValue!
        badSalt[2] = .bytes([UInt8](repeating: 0, count: 16 + 48))
        var badProtocol = input.mapValue!
        badProtocol[4] = 7
        var missing = input.mapValue!
        missing[2] = nil
        let cases: [(CBORValue, UInt8)] = [
            (.map(badAuth), 0x33), (.map(badProtocol), 0x02), (.map(missing), 0x14), ("salt", 0x11),
        ]
        for (extensionInput, expected) in cases {
            let status = try await harness.send(
                .getAssertion, Fixtures.getAssertion(extra: [4: ["hmac-secret": extensionInput]])
            ).status
            #expect(status == expected)
        }
        // A correctly authenticated ciphertext of 48 bytes decrypts to a salt length that is not 32 or 64.
        let platform = PlatformDouble(harness: harness)
        let (keyAgreement, shared) = try await platform.encapsulate()
        let saltEnc = try platform.encrypt(shared, [UInt8](repeating: 3, count: 48))
        let odd: CBORValue = [
            1: keyAgreement, 2: .bytes(saltEnc),
            3: .bytes(PinUvAuthProtocol.two.authenticate(key: shared, message: saltEnc)),
            4: 2,
        ]
        #expect(
            try await harness.send(.getAssertion, Fixtures.getAssertion(extra: [4: ["hmac-secret": odd]])).status
                == 0x02)
        #expect(harness.user.requests.count == 1)  // only the registration asked
    }

    @Test func credentialsWithoutHMACSecretGiveNoOutput() async throws {
        let harness = Harness()
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential())
        let (input, _) = try await Self.input(harness, [UInt8](repeating: 1, count: 32), pinProtocol: .two)
        let (status, body) = try await harness.send(
            .getAssertion, Fixtures.getAssertion(extra: [4: ["hmac-secret": input]]))
        #expect(status == 0)
        #expect(try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).extensions == nil)
    }
}

struct CredBlobAndLargeBlobKeyTests {
    @Test func credBlobIsStoredAndReturned() async throws {
        let harness = Harness()
        let blob = Array("thirty-two bytes of credBlob....".utf8)
        let made = try await harness.send(
            .makeCredential, Fixtures.makeCredential(extra: [6: ["credBlob": .bytes(blob)]]))
        #expect(try AuthenticatorData(bytes: try #require(made.body?[2]?.bytesValue)).extensions == ["credBlob": true])
        let tooLong = try await harness.send(
            .makeCredential,
            Fixtures.makeCredential(userID: [9], extra: [6: ["credBlob": .bytes(blob + [0])]]))
        #expect(
            try AuthenticatorData(bytes: try #require(tooLong.body?[2]?.bytesValue)).extensions == ["credBlob": false])
        let (status, body) = try await harness.send(
            .getAssertion, Fixtures.getAssertion(options: ["uv": true], extra: [4: ["credBlob": true]]))
        #expect(status == 0)
        let extensions = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).extensions
        #expect(extensions == ["credBlob": .bytes([])])  // newest first: the one whose blob was too long
        let next = try await harness.send(.getNextAssertion)
        #expect(
            try AuthenticatorData(bytes: try #require(next.body?[2]?.bytesValue)).extensions == [
                "credBlob": .bytes(blob)
            ])
    }

    @Test func largeBlobKeyOnlyForDiscoverableCredentialsAndOnlyWhenAsked() async throws {
        let harness = Harness()
        let made = try await harness.send(.makeCredential, Fixtures.makeCredential(extra: [6: ["largeBlobKey": true]]))
        let key = try #require(made.body?[5]?.bytesValue)
        #expect(key.count == 32)
        let assertion = try await harness.send(.getAssertion, Fixtures.getAssertion(extra: [4: ["largeBlobKey": true]]))
        #expect(assertion.body?[7] == .bytes(key))
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).body?[7] == nil)
        #expect(
            try await harness.send(.getAssertion, Fixtures.getAssertion(extra: [4: ["largeBlobKey": false]])).status
                == 0x2C)
        let serverSide = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [8], options: nil, extra: [6: ["largeBlobKey": true]]))
        #expect(serverSide.status == 0 && serverSide.body?[5] == nil)

        // Credential management lists the key with the credential.
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: CredentialManagementTests.cm).token)
        let hash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let listed = try await harness.send(
            .credentialManagement,
            CredentialManagementTests.request(platform, token, subcommand: 4, parameters: [1: hash]))
        #expect(listed.body?[11] == .bytes(key))
    }
}

struct LargeBlobsTests {
    static let lbw = 0x10

    static func serialized(_ entries: CBORValue) -> [UInt8] {
        let body = entries.encoded()
        return body + Array(SHA256.hash(data: body).prefix(16))
    }

    static func write(
        _ harness: Harness, _ platform: PlatformDouble, token: [UInt8], data: [UInt8], offset: Int, length: Int?
    ) async throws -> UInt8 {
        var message = [UInt8](repeating: 0xFF, count: 32) + [0x0C, 0x00]
        message += withUnsafeBytes(of: UInt32(offset).littleEndian) { Array($0) }
        message += Array(SHA256.hash(data: data))
        var map: [CBORValue: CBORValue] = [
            2: .bytes(data), 3: .int(offset),
            5: .bytes(platform.pinProtocol.authenticate(key: token, message: message)),
            6: .int(platform.pinProtocol.rawValue),
        ]
        if let length { map[4] = .int(length) }
        return try await harness.send(.largeBlobs, .map(map)).status
    }

    @Test func initialArrayAndChunkedReads() async throws {
        let harness = Harness()
        let initial = try await harness.send(.largeBlobs, [1: 100, 3: 0])
        #expect(initial.body?[1] == .bytes([UInt8](hex: "8076be8b528d0075f7aae98d6fa57a6d3c")!))
        #expect(try await harness.send(.largeBlobs, [1: 5, 3: 3]).body?[1] == .bytes([UInt8](hex: "8b528d0075")!))
        #expect(try await harness.send(.largeBlobs, [1: 5, 3: 17]).body?[1] == .bytes([]))
        #expect(try await harness.send(.largeBlobs, [1: 5, 3: 18]).status == 0x02)
        #expect(try await harness.send(.largeBlobs, [1: 5, 3: 0, 4: 5]).status == 0x02)
        #expect(try await harness.send(.largeBlobs, [1: 8000, 3: 0]).status == 0x03)
        #expect(try await harness.send(.largeBlobs, [1: 5]).status == 0x14)
        #expect(try await harness.send(.largeBlobs, [3: 0]).status == 0x02)
    }

    @Test func writesInFragmentsWithTheHashChecked() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: Self.lbw).token)
        let array = Self.serialized([[1: .bytes([UInt8](repeating: 7, count: 60)), 2: .bytes([1]), 3: 60]])
        let cut = 40
        #expect(
            try await Self.write(
                harness, platform, token: token, data: Array(array[..<cut]), offset: 0, length: array.count) == 0)
        // Out of order, or with a length after the first fragment.
        #expect(
            try await Self.write(
                harness, platform, token: token, data: Array(array[cut...]), offset: cut + 1, length: nil) == 0x04)
        #expect(
            try await Self.write(harness, platform, token: token, data: Array(array[cut...]), offset: cut, length: 9)
                == 0x02)
        #expect(
            try await Self.write(harness, platform, token: token, data: Array(array[cut...]), offset: cut, length: nil)
                == 0)
        #expect(try await harness.send(.largeBlobs, [1: 1000, 3: 0]).body?[1] == .bytes(array))
        #expect(try harness.store.largeBlobArray() == array)

        var corrupt = array
        corrupt[3] ^= 1
        #expect(
            try await Self.write(harness, platform, token: token, data: corrupt, offset: 0, length: corrupt.count)
                == 0x3D)
        #expect(try harness.store.largeBlobArray() == array)
        #expect(try await Self.write(harness, platform, token: token, data: [1], offset: 0, length: 5000) == 0x18)
        #expect(try await Self.write(harness, platform, token: token, data: [1], offset: 0, length: 3) == 0x02)
    }

    @Test func writesNeedAnLbwToken() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        let array = Self.serialized([])
        #expect(try await harness.send(.largeBlobs, [2: .bytes(array), 3: 0, 4: .int(array.count)]).status == 0x36)
        let gaToken = try #require(try await platform.uvToken(permissions: 0x02).token)
        #expect(
            try await Self.write(harness, platform, token: gaToken, data: array, offset: 0, length: array.count) == 0x33
        )
        #expect(try harness.store.largeBlobArray() == nil)
        // lbw survives a getAssertion that spends the token's other permissions.
        let token = try #require(try await platform.uvToken(permissions: Self.lbw | 0x02, rpID: "example.com").token)
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential())
        _ = try await harness.send(.getAssertion, Fixtures.getAssertion(extra: platform.assertionParam(token)))
        #expect(try await Self.write(harness, platform, token: token, data: array, offset: 0, length: array.count) == 0)
        #expect(try await harness.send(.reset).status == 0)
        #expect(try harness.store.largeBlobArray() == nil)
    }
}
