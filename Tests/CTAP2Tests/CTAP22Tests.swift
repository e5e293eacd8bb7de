import CBOR
import Crypto
import Foundation
import Testing
import WebAuthn
import _CryptoExtras

@testable import CTAP2

/// thirdPartyPayment (CTAP 2.2): stored at makeCredential, reported at getAssertion and by credential management.
struct ThirdPartyPaymentTests {
    @Test func storedAtRegistrationAndReportedWhenAsked() async throws {
        let harness = Harness()
        let made = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [1], extra: [6: ["thirdPartyPayment": true]]))
        try #require(made.status == 0)
        let authData = try AuthenticatorData(bytes: try #require(made.body?[2]?.bytesValue))
        #expect(authData.extensions == ["thirdPartyPayment": true])
        let payment = try #require(authData.attestedCredentialData?.credentialID)
        let plain = try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [2], name: "bob"))
        let plainData = try AuthenticatorData(bytes: try #require(plain.body?[2]?.bytesValue))
        let plainID = try #require(plainData.attestedCredentialData?.credentialID)
        #expect(try harness.store.credential(id: payment)?.thirdPartyPayment == true)
        #expect(try harness.store.credential(id: plainID)?.thirdPartyPayment == false)

        for (id, expected) in [(payment, true), (plainID, false)] {
            let (status, body) = try await harness.send(
                .getAssertion, Fixtures.getAssertion(allowList: [id], extra: [4: ["thirdPartyPayment": true]]))
            try #require(status == 0)
            let extensions = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).extensions
            #expect(extensions == ["thirdPartyPayment": .bool(expected)])
        }
        // Not asked: not reported.
        let (_, body) = try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [payment]))
        #expect(try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).extensions == nil)
        // A value of the wrong type is refused.
        #expect(
            try await harness.send(
                .makeCredential, Fixtures.makeCredential(userID: [3], extra: [6: ["thirdPartyPayment": 1]])
            ).status == 0x11)
    }

    @Test func credentialManagementListsTheFlag() async throws {
        let harness = Harness()
        _ = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [1], extra: [6: ["thirdPartyPayment": true]]))
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: CredentialManagementTests.cm).token)
        let hash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let listed = try await harness.send(
            .credentialManagement,
            CredentialManagementTests.request(platform, token, subcommand: 4, parameters: [1: hash]))
        try #require(listed.status == 0)
        #expect(listed.body?[12] == true)
    }
}

/// The persistent read-only credential-management token (CTAP 2.2 pcmr) and the getInfo fields only it decrypts.
struct PersistentTokenTests {
    static let pcmr = 0x40

    /// python-fido2's `Info._decrypt`: the 16-byte value inside `iv ‖ AES-128-CBC`.
    static func decrypt(_ field: CBORValue?, token: [UInt8], label: String) throws -> [UInt8] {
        let bytes = try #require(field?.bytesValue)
        try #require(bytes.count == 32)
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: token), salt: [UInt8](repeating: 0, count: 32),
            info: Array(label.utf8), outputByteCount: 16)
        return Array(
            try AES._CBC.decrypt(
                bytes[16...], using: key, iv: AES._CBC.IV(ivBytes: bytes[..<16]), noPadding: true))
    }

    static func withPIN() async throws -> (Harness, PlatformDouble) {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        try #require(try await platform.setPIN("1234") == 0)
        _ = try await GetAssertionTests.register(["alice", "bob"], on: harness)
        return (harness, platform)
    }

    @Test func readsWithoutAFreshTokenAcrossARestartAndNeverWrites() async throws {
        let (harness, platform) = try await Self.withPIN()
        let token = try #require(try await platform.pinToken("1234", permissions: Self.pcmr).token)
        #expect(try await platform.pinToken("1234", permissions: Self.pcmr).token == token)  // the same for everyone

        // A restart: a new authenticator on the same store takes the same token.
        let restarted = Harness(store: harness.store, seed: 2)
        let again = PlatformDouble(harness: restarted)
        let hash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let metadata = try await restarted.send(
            .credentialManagement, CredentialManagementTests.request(again, token, subcommand: 1))
        #expect(metadata.status == 0 && metadata.body?[1] == 2)
        let relyingParties = try await restarted.send(
            .credentialManagement, CredentialManagementTests.request(again, token, subcommand: 2))
        #expect(relyingParties.status == 0 && relyingParties.body?[3]?["id"] == "example.com")
        let listed = try await restarted.send(
            .credentialManagement, CredentialManagementTests.request(again, token, subcommand: 4, parameters: [1: hash])
        )
        #expect(listed.status == 0 && listed.body?[9] == 2)
        #expect(try await restarted.send(.credentialManagement, [1: 5]).status == 0)

        // Read only: no delete, no rename, and nothing else it could be used for.
        let id = try #require(listed.body?[7])
        let delete = try await restarted.send(
            .credentialManagement, CredentialManagementTests.request(again, token, subcommand: 6, parameters: [2: id]))
        #expect(delete.status == 0x33)
        let makeCredential = try await restarted.send(
            .makeCredential, Fixtures.makeCredential(userID: [7], extra: again.param(token)))
        #expect(makeCredential.status == 0x33)
        #expect(try restarted.store.allCredentials().count == 2)
    }

    @Test func aPINChangeOrAResetVoidsIt() async throws {
        let (harness, platform) = try await Self.withPIN()
        let token = try #require(try await platform.pinToken("1234", permissions: Self.pcmr).token)
        try #require(try await platform.changePIN(from: "1234", to: "5678") == 0)
        let refused = try await harness.send(
            .credentialManagement, CredentialManagementTests.request(platform, token, subcommand: 1))
        #expect(refused.status == 0x33)
        let renewed = try #require(try await platform.pinToken("5678", permissions: Self.pcmr).token)
        #expect(renewed != token)
        #expect(try await harness.send(.getInfo).body?[0x19] != nil)

        try #require(try await harness.send(.reset).status == 0)
        let (_, info) = try await harness.send(.getInfo)
        #expect(info?[0x19] == nil && info?[0x1E] == nil)  // no device secret until the next token
    }

    @Test func mixedWithAnotherPermissionItIsRefused() async throws {
        let (_, platform) = try await Self.withPIN()
        for permissions in [Self.pcmr | CredentialManagementTests.cm, Self.pcmr | 0x01] {
            #expect(try await platform.pinToken("1234", permissions: permissions).status == 0x40)
        }
        #expect(try await platform.uvToken(permissions: Self.pcmr | 0x02).status == 0x40)
        // Through built-in verification on its own, as through the PIN.
        #expect(try await platform.uvToken(permissions: Self.pcmr).token != nil)
    }

    @Test func getInfoCarriesTheIdentifierAndTheStoreStateEncryptedAnew() async throws {
        let (harness, platform) = try await Self.withPIN()
        #expect(try await harness.send(.getInfo).body?[0x19] == nil)  // no token was ever issued
        let token = try #require(try await platform.pinToken("1234", permissions: Self.pcmr).token)

        let first = try #require(try await harness.send(.getInfo).body)
        let second = try #require(try await harness.send(.getInfo).body)
        #expect(first[0x19] != second[0x19] && first[0x1E] != second[0x1E])  // a fresh IV each time
        let identifier = try Self.decrypt(first[0x19], token: token, label: "encIdentifier")
        #expect(try Self.decrypt(second[0x19], token: token, label: "encIdentifier") == identifier)
        let state = try Self.decrypt(first[0x1E], token: token, label: "encCredStoreState")
        #expect(try Self.decrypt(second[0x1E], token: token, label: "encCredStoreState") == state)

        // A new passkey, and a rename, each change the state; the identifier stays.
        _ = try await GetAssertionTests.register(["carol"], on: harness)
        let added = try #require(try await harness.send(.getInfo).body)
        let afterAdding = try Self.decrypt(added[0x1E], token: token, label: "encCredStoreState")
        #expect(afterAdding != state)
        #expect(try Self.decrypt(added[0x19], token: token, label: "encIdentifier") == identifier)
        let carol = try #require(try harness.store.allCredentials().first { $0.userName == "carol" })
        _ = try harness.store.updateUser(credentialID: carol.id, userName: "carol2", userDisplayName: nil)
        let renamed = try #require(try await harness.send(.getInfo).body)
        #expect(try Self.decrypt(renamed[0x1E], token: token, label: "encCredStoreState") != afterAdding)
    }
}

/// getInfo uvCountSinceLastPinEntry (CTAP 2.2): built-in verifications since the PIN was last entered.
struct VerificationCountTests {
    @Test func countsBuiltInVerificationsUntilThePINIsEntered() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await harness.send(.getInfo).body?[0x17] == 0)
        _ = try await GetAssertionTests.register(["alice"], on: harness)  // uv: true, built in
        _ = try await harness.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true]))
        #expect(try await harness.send(.getInfo).body?[0x17] == 2)
        _ = try await harness.send(.getAssertion, Fixtures.getAssertion())  // presence only
        #expect(try await harness.send(.getInfo).body?[0x17] == 2)
        try #require(try await platform.setPIN("1234") == 0)
        try #require(try await platform.pinToken("1234").token != nil)
        #expect(try await harness.send(.getInfo).body?[0x17] == 0)
    }

    @Test func aKeyWithoutBuiltInVerificationHasNoCount() async throws {
        let harness = Harness(configuration: PinOnlySecurityKeyTests.key)
        #expect(try await harness.send(.getInfo).body?[0x17] == nil)
    }
}
