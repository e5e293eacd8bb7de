import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

/// `passkey serve --pin-only` (`AuthenticatorConfiguration.pinOnlySecurityKey`): a security key without built-in user
/// verification, like most hardware keys, where the PIN is the only verification (Docs/CTAP.md).
struct PinOnlySecurityKeyTests {
    static let key = AuthenticatorConfiguration.pinOnlySecurityKey

    static func withPIN(_ settings: AuthenticatorSettings = AuthenticatorSettings()) async throws -> (
        Harness, PlatformDouble
    ) {
        let harness = Harness(configuration: key, store: InMemoryCredentialStore(settings: settings))
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("1234") == 0)
        return (harness, platform)
    }

    static func flags(_ body: CBORValue?, authenticatorData key: CBORValue = 2) throws -> AuthenticatorFlags {
        try AuthenticatorData(bytes: try #require(body?[key]?.bytesValue)).flags
    }

    /// No `uv` (no built-in method) and no `uvAcfg` (acfg through built-in verification); everything a PIN serves stays.
    @Test func getInfoHasNoBuiltInVerification() async throws {
        let harness = Harness(configuration: Self.key)
        let (status, info) = try await harness.send(.getInfo)
        #expect(status == 0)
        let expected: CBORValue = [
            1: ["FIDO_2_0", "FIDO_2_1"],
            2: [
                "credProtect", "hmac-secret", "hmac-secret-mc", "credBlob", "largeBlobKey", "minPinLength",
                "thirdPartyPayment",
            ],
            3: .bytes([UInt8](hex: "8391e37832c74aa5ad166f0cf4ad7b23")!),
            4: [
                "rk": true, "up": true, "clientPin": false, "pinUvAuthToken": true, "makeCredUvNotRqd": true,
                "credMgmt": true, "perCredMgmtRO": true, "authnrCfg": true, "setMinPINLength": true, "alwaysUv": false,
                "largeBlobs": true,
            ],
            5: 7609,
            6: [2, 1],
            7: 16,
            8: 128,
            9: ["usb"],
            10: [
                ["alg": -7, "type": "public-key"], ["alg": -8, "type": "public-key"],
                ["alg": -9, "type": "public-key"], ["alg": -19, "type": "public-key"],
            ],
            0x0B: 4096,
            0x0C: false,
            0x0D: 4,
            0x0E: 0x00_01_00,
            0x0F: 32,
            0x10: 8,
            0x16: ["packed"],
            0x1A: ["usb"],
            0x1B: false,
            0x1D: 63,
            0x1F: [2, 3],
        ]
        #expect(info == expected)
        #expect(Self.key.attestationFormat == .packedSelf)

        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await harness.send(.getInfo).body?[4]?["clientPin"] == true)
        let always = Harness(configuration: Self.key, store: InMemoryCredentialStore(settings: .init(alwaysUV: true)))
        let options = try await always.send(.getInfo).body?[4]
        #expect(options?["alwaysUv"] == true && options?["makeCredUvNotRqd"] == false && options?["uv"] == nil)
    }

    /// `uv: true` without a pinUvAuthParam: CTAP2_ERR_INVALID_OPTION (CTAP 2.1 §6.1.2 step 5, §6.2.2 step 4), before the
    /// user is asked or anything is stored. The default security key verifies with the store passphrase instead.
    @Test func theUVOptionIsRefused() async throws {
        let (harness, platform) = try await Self.withPIN()
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential())
        #expect(status == 0x2C)
        #expect(body == nil)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential(options: ["uv": true])).status == 0x2C)
        #expect(try harness.store.allCredentials().isEmpty)
        #expect(harness.user.requests.map(\.action) == [.setPIN])  // only for the PIN

        // With a pinUvAuthParam the uv option is treated as false (§6.1.2 step 5): the token verifies.
        let token = try #require(try await platform.pinToken("1234", permissions: 0x03, rpID: "example.com").token)
        let made = try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token)))
        #expect(made.status == 0)
        #expect(try Self.flags(made.body).contains(.userVerified))
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true])).status == 0x2C)

        let ordinary = Harness(configuration: .securityKey)
        let verified = try await ordinary.send(.makeCredential, Fixtures.makeCredential())
        #expect(verified.status == 0)
        #expect(try Self.flags(verified.body).contains(.userVerified))
        #expect(try await ordinary.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true])).status == 0)
    }

    /// Without a built-in method there is no getPinUvAuthTokenUsingUvWithPermissions (getInfo pinUvAuthToken offers it
    /// only with `uv`, §6.4) and no UV retry counter: CTAP2_ERR_INVALID_SUBCOMMAND, with or without a PIN.
    @Test func theBuiltInVerificationSubcommandsAreRefused() async throws {
        let harness = Harness(configuration: Self.key)
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.uvToken(permissions: 0x03, rpID: "example.com").status == 0x3E)
        #expect(try await harness.send(.clientPIN, [1: 2, 2: 7]).status == 0x3E)
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await platform.uvToken(permissions: 0x01, rpID: "example.com").status == 0x3E)
        #expect(try await harness.send(.clientPIN, [1: 2, 2: 7]).status == 0x3E)
        #expect(harness.user.requests.map(\.action) == [.setPIN])  // only for the PIN
        // The default security key answers both.
        let ordinary = Harness(configuration: .securityKey)
        #expect(try await PlatformDouble(harness: ordinary).uvToken(rpID: "example.com").status == 0)
        #expect(try await ordinary.send(.clientPIN, [1: 2, 2: 7]).body?[5] == 8)
    }

    /// No PIN: not protected by any user verification, so a discoverable makeCredential without a token is made with
    /// user presence only, as is what OpenSSH's libfido2 sends without a PIN (`rk: true`, no `uv`, credProtect 2).
    @Test func withoutAPINADiscoverableCredentialGetsUserPresenceOnly() async throws {
        let harness = Harness(configuration: Self.key)
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential(options: ["rk": true]))
        #expect(status == 0)
        let flags = try Self.flags(body)
        #expect(flags.contains(.userPresent) && !flags.contains(.userVerified))
        #expect(
            harness.user.requests
                == [
                    ConsentRequest(
                        action: .makeCredential(
                            relyingPartyID: "example.com", userName: "alice", userDisplayName: "Alice"),
                        requiresPresence: true, requiresVerification: false)
                ])
        #expect(try harness.store.allCredentials().first?.isDiscoverable == true)

        let enrolled = try await harness.send(
            .makeCredential, OpenSSHEnrollmentTests.enroll(PlatformDouble(harness: harness), token: nil))
        #expect(enrolled.status == 0)
        #expect(enrolled.body?[1] == "packed")
        #expect(try !Self.flags(enrolled.body).contains(.userVerified))

        // Sign-in without a token: user presence only, and no user names without verification (§6.2.2).
        let assertion = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(assertion.status == 0)
        #expect(try Self.flags(assertion.body) == [.userPresent, .backupEligible, .backupState])
        #expect(assertion.body?[4]?["name"] == nil)
        #expect(harness.user.requests.allSatisfy { !$0.requiresVerification })
    }

    /// A PIN set: protected, so a discoverable makeCredential without a token is CTAP2_ERR_PUAT_REQUIRED (§6.1.2 step 7),
    /// which makes Chromium and ssh-keygen ask for the PIN. A non-discoverable one is still made (makeCredUvNotRqd).
    @Test func withAPINADiscoverableCredentialNeedsAToken() async throws {
        let (harness, _) = try await Self.withPIN()
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential(options: ["rk": true]))
        #expect(status == 0x36)
        #expect(body == nil)
        let serverSide = try await harness.send(.makeCredential, Fixtures.makeCredential(options: nil))
        #expect(serverSide.status == 0)
        #expect(try !Self.flags(serverSide.body).contains(.userVerified))
        #expect(try harness.store.allCredentials().map(\.isDiscoverable) == [false])
        #expect(harness.user.requests.map(\.requiresVerification) == [false, false])  // setPIN, the credential
        let enrolled = try await harness.send(
            .makeCredential, OpenSSHEnrollmentTests.enroll(PlatformDouble(harness: harness), token: nil))
        #expect(enrolled.status == 0x36)
    }

    /// The flow Chromium and python-fido2 run: getPINRetries, getKeyAgreement, a PIN token with mc, makeCredential with
    /// it; then a ga token for getAssertion. Both are user-verified; the user is only asked for presence.
    @Test(arguments: ClientPINTests.protocols) func aPINTokenRegistersAndSignsIn(pinProtocol: PinUvAuthProtocol)
        async throws
    {
        let harness = Harness(configuration: Self.key)
        let platform = PlatformDouble(harness: harness, pinProtocol: pinProtocol)
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await platform.retries() == (8, false))
        let makeToken = try #require(try await platform.pinToken("1234", permissions: 0x01, rpID: "example.com").token)
        let made = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: ["rk": true], extra: platform.param(makeToken)))
        #expect(made.status == 0)
        #expect(try Self.flags(made.body).isSuperset(of: [.userPresent, .userVerified]))

        let assertToken = try #require(
            try await platform.pinToken("1234", permissions: 0x02, rpID: "example.com").token)
        let assertion = try await harness.send(
            .getAssertion, Fixtures.getAssertion(extra: platform.assertionParam(assertToken)))
        #expect(assertion.status == 0)
        #expect(try Self.flags(assertion.body).isSuperset(of: [.userPresent, .userVerified]))
        #expect(assertion.body?[4]?["name"] == "alice")
        #expect(harness.user.requests.map(\.action).first == .setPIN && harness.user.requests.count == 3)
        #expect(harness.user.requests.allSatisfy { $0.requiresPresence && !$0.requiresVerification })
        // A wrong PIN is still a wrong PIN.
        #expect(try await platform.pinToken("4321", permissions: 0x02, rpID: "example.com").status == 0x31)
        #expect(try await platform.retries() == (7, false))
    }

    /// alwaysUv: every makeCredential, and every getAssertion with user presence, needs a token (§6.1.2 step 6,
    /// §6.2.2 step 5): CTAP2_ERR_PUAT_REQUIRED, with or without a PIN, since clientPin is supported. A silent
    /// getAssertion (up false) is not covered by alwaysUv.
    @Test func alwaysUVNeedsATokenForEveryRequest() async throws {
        let noPIN = Harness(configuration: Self.key, store: InMemoryCredentialStore(settings: .init(alwaysUV: true)))
        #expect(try await noPIN.send(.makeCredential, Fixtures.makeCredential(options: ["rk": true])).status == 0x36)
        #expect(try await noPIN.send(.makeCredential, Fixtures.makeCredential(options: nil)).status == 0x36)
        #expect(try await noPIN.send(.getAssertion, Fixtures.getAssertion()).status == 0x36)
        #expect(noPIN.user.requests.isEmpty)

        let (harness, platform) = try await Self.withPIN(AuthenticatorSettings(alwaysUV: true))
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential(options: nil)).status == 0x36)
        let token = try #require(try await platform.pinToken("1234", permissions: 0x01, rpID: "example.com").token)
        let made = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: nil, extra: platform.param(token)))
        #expect(made.status == 0)
        let id = try #require(try harness.store.allCredentials().first?.id)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [id])).status == 0x36)
        let silent = try await harness.send(
            .getAssertion, Fixtures.getAssertion(allowList: [id], options: ["up": false]))
        #expect(silent.status == 0)
        #expect(try Self.flags(silent.body) == [.backupEligible, .backupState])
        let assertToken = try #require(
            try await platform.pinToken("1234", permissions: 0x02, rpID: "example.com").token)
        let signed = try await harness.send(
            .getAssertion, Fixtures.getAssertion(allowList: [id], extra: platform.assertionParam(assertToken)))
        #expect(signed.status == 0)
        #expect(try Self.flags(signed.body).contains(.userVerified))
    }

    /// credProtect level 3 (userVerificationRequired): without a token the credential is not there, even with an
    /// allowList; with a PIN token it is. Made before any PIN was set, it keeps its level (CTAP 2.1 §12.1).
    @Test func credProtectLevelThreeNeedsAToken() async throws {
        let harness = Harness(configuration: Self.key)
        let platform = PlatformDouble(harness: harness)
        let made = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: ["rk": true], extra: [6: ["credProtect": 3]]))
        #expect(made.status == 0)
        let stored = try #require(try harness.store.allCredentials().first)
        #expect(stored.credentialProtection == .userVerificationRequired)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0x2E)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [stored.id])).status == 0x2E)

        #expect(try await platform.setPIN("1234") == 0)
        let token = try #require(try await platform.pinToken("1234", permissions: 0x02, rpID: "example.com").token)
        let found = try await harness.send(.getAssertion, Fixtures.getAssertion(extra: platform.assertionParam(token)))
        #expect(found.status == 0)
        #expect(found.body?[1]?["id"] == .bytes(stored.id))
    }
}
