import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

/// What a hybrid phone is sent by Chromium (device/fido/fido_device_authenticator.cc: no `uv` option when getInfo says
/// makeCredUvNotRqd), and that the phone verifies the user itself (`UserVerificationPolicy.always`).
struct HybridPhoneVerificationTests {
    static let phone = AuthenticatorConfiguration.hybridPhone(oneRequestPerSession: true)

    /// makeCredential as Chromium sends it to a phone for a passkey: rk, no uv, no pinUvAuthParam.
    static func chromiumMakeCredential(userID: [UInt8] = [1, 2, 3, 4], rk: Bool = true) -> CBORValue {
        Fixtures.makeCredential(userID: userID, options: rk ? ["rk": true] : nil)
    }

    @Test func makeCredentialWithoutUVIsVerifiedByThePhone() async throws {
        let harness = Harness(configuration: Self.phone)
        let (status, body) = try await harness.send(.makeCredential, Self.chromiumMakeCredential())
        #expect(status == 0)
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.isSuperset(of: [.userPresent, .userVerified]))
        #expect(
            harness.user.requests
                == [
                    ConsentRequest(
                        action: .makeCredential(
                            relyingPartyID: "example.com", userName: "alice", userDisplayName: "Alice"),
                        requiresPresence: true, requiresVerification: true)
                ])
        #expect(try harness.store.allCredentials().first?.isDiscoverable == true)
        // Not only passkeys: every request the phone accepts is verified.
        let serverSide = try await harness.send(.makeCredential, Self.chromiumMakeCredential(userID: [5], rk: false))
        #expect(serverSide.status == 0)
        #expect(
            try AuthenticatorData(bytes: try #require(serverSide.body?[2]?.bytesValue)).flags.contains(.userVerified))
        #expect(harness.user.requests.last?.requiresVerification == true)
    }

    @Test func getAssertionWithAnEmptyAllowListAndNoUVIsVerifiedByThePhone() async throws {
        let harness = Harness(configuration: Self.phone)
        #expect(try await harness.send(.makeCredential, Self.chromiumMakeCredential()).status == 0)
        let (status, body) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(status == 0)
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.isSuperset(of: [.userPresent, .userVerified]))
        #expect(body?[4]?["name"] == "alice")  // names only after verification
        let summary = AccountSummary(
            relyingPartyID: "example.com", userName: "alice", userDisplayName: "Alice",
            credentialID: try #require(try harness.store.allCredentials().first?.id))
        #expect(
            harness.user.requests.last
                == ConsentRequest(
                    action: .getAssertion(
                        relyingPartyID: "example.com", accounts: [summary], chooseOnAuthenticator: false),
                    requiresPresence: true, requiresVerification: true))
        // `uv: false` spelt out changes nothing either.
        let explicit = try await harness.send(.getAssertion, Fixtures.getAssertion(options: ["uv": false]))
        #expect(explicit.status == 0)
        #expect(try AuthenticatorData(bytes: try #require(explicit.body?[2]?.bytesValue)).flags.contains(.userVerified))
    }

    /// A PIN set on the store (by `passkey serve`) does not matter to the phone: it never answers PUAT_REQUIRED.
    @Test func aPINOnTheStoreDoesNotTurnThePhoneIntoPUATRequired() async throws {
        let settings = AuthenticatorSettings(pinHash: PlatformDouble.pinHash("1234"), pinCodePointCount: 4)
        let harness = Harness(configuration: Self.phone, store: InMemoryCredentialStore(settings: settings))
        #expect(try await harness.send(.makeCredential, Self.chromiumMakeCredential()).status == 0)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0)
        #expect(harness.user.requests.map(\.requiresVerification) == [true, true])
    }

    @Test(arguments: [
        (ConsentResult.denied, 0x27, 8),  // CTAP2_ERR_OPERATION_DENIED
        (.verificationFailed, 0x3F, 7),  // CTAP2_ERR_UV_INVALID, one UV retry fewer
        (.timedOut, 0x2F, 8),
        (.cancelled, 0x2D, 8),
    ])
    func aRefusedVerificationStoresNothing(answer: ConsentResult, expected: Int, uvRetries: Int) async throws {
        let harness = Harness(answers: [answer], configuration: Self.phone)
        let (status, body) = try await harness.send(.makeCredential, Self.chromiumMakeCredential())
        #expect(status == UInt8(expected))
        #expect(body == nil)
        #expect(try harness.store.allCredentials().isEmpty)
        #expect(try harness.store.settings().uvRetries == uvRetries)
    }

    @Test func aFailedVerificationRefusesTheAssertionAndTheLastRetryBlocks() async throws {
        let store = InMemoryCredentialStore(settings: AuthenticatorSettings(uvRetries: 2))
        let first = Harness(configuration: Self.phone, store: store)
        #expect(try await first.send(.makeCredential, Self.chromiumMakeCredential()).status == 0)
        #expect(try store.settings().uvRetries == 8)  // a verification restores the counter
        try store.saveSettings(AuthenticatorSettings(uvRetries: 2))
        // The next scan: a fresh authenticator over the same store.
        let harness = Harness(
            answers: [.verificationFailed, .verificationFailed], configuration: Self.phone, store: store)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0x3F)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0x3C)  // CTAP2_ERR_UV_BLOCKED
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0x3C)
        #expect(harness.user.requests.count == 2)  // blocked: not asked again
    }
}

/// What libfido2 1.12 (Debian 12) sends for OpenSSH 9.2's `ssh-keygen -t ecdsa-sk -O resident`, as recorded in the
/// VM with `passkey serve --uhid --verbose` (Docs/CTAP.md), replayed against a security key.
struct OpenSSHEnrollmentTests {
    static let application = "ssh:probe"
    /// key_lookup's client data: 32 zero bytes, hashed by fido_assert_set_clientdata.
    static let lookupClientDataHash = Array(SHA256.hash(data: [UInt8](repeating: 0, count: 32)))
    static let enrollClientDataHash = Array(SHA256.hash(data: Array("ssh-keygen challenge".utf8)))

    /// key_lookup: a silent getAssertion (up false) for the application, with a pinUvAuthParam when a token was got.
    static func lookup(_ platform: PlatformDouble, token: [UInt8]?) -> CBORValue {
        var map: [CBORValue: CBORValue] = [
            1: .text(application), 2: .bytes(lookupClientDataHash), 5: ["up": false],
        ]
        if let token { map.merge(platform.assertionParam(token, lookupClientDataHash)) { _, new in new } }
        return .map(map)
    }

    /// sk_enroll's makeCredential: rp without a name, user "openssh" with a 32-byte zero ID, credProtect 2, {rk: true},
    /// and no `uv`; a pinUvAuthParam only when ssh-keygen was given a PIN.
    static func enroll(_ platform: PlatformDouble, token: [UInt8]?) -> CBORValue {
        var map: [CBORValue: CBORValue] = [
            1: .bytes(enrollClientDataHash),
            2: ["id": .text(application)],
            3: ["id": .bytes([UInt8](repeating: 0, count: 32)), "name": "openssh", "displayName": "openssh"],
            4: Fixtures.es256,
            6: ["credProtect": 2],
            7: ["rk": true],
        ]
        if let token { map.merge(platform.param(token, enrollClientDataHash)) { _, new in new } }
        return .map(map)
    }

    /// No PIN: the token comes from built-in UV, the lookup finds nothing, and makeCredential without a token or `uv`
    /// is verified with the built-in method instead of answering CTAP2_ERR_PUAT_REQUIRED (before: 0x36, which
    /// ssh-keygen reads as "PIN required" and then fails with "PIN incorrect").
    @Test func withoutAPINTheKeyIsMadeWithBuiltInVerification() async throws {
        let harness = Harness(configuration: .securityKey)
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: 0x02, rpID: Self.application).token)
        #expect(try await harness.send(.getAssertion, Self.lookup(platform, token: token)).status == 0x2E)
        let asked = harness.user.requests.count
        let (status, body) = try await harness.send(.makeCredential, Self.enroll(platform, token: nil))
        #expect(status == 0)
        #expect(body?[1] == "packed")  // fido_cred_verify_self needs the self signature
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.isSuperset(of: [.userPresent, .userVerified]))
        #expect(harness.user.requests.count == asked + 1)
        #expect(harness.user.requests.last?.requiresVerification == true)
        let stored = try #require(try harness.store.allCredentials().first)
        #expect(stored.isDiscoverable && stored.credentialProtection == .userVerificationOptionalWithCredentialIDList)

        // ssh then signs with the key: an allowList, up true, no uv; no verification asked.
        let sign = try await harness.send(
            .getAssertion,
            [
                1: .text(Self.application), 2: .bytes(Self.enrollClientDataHash),
                3: [["type": "public-key", "id": .bytes(stored.id)]], 5: ["up": true],
            ])
        #expect(sign.status == 0)
        #expect(harness.user.requests.last?.requiresVerification == false)
    }

    @Test func aFailedBuiltInVerificationMakesNoKey() async throws {
        let harness = Harness(answers: [.verificationFailed], configuration: .securityKey)
        let platform = PlatformDouble(harness: harness)
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: nil)).status == 0x3F)
        #expect(try harness.store.allCredentials().isEmpty)
    }

    /// With a PIN: the same first attempt answers CTAP2_ERR_PUAT_REQUIRED, so ssh-keygen asks for the PIN; then
    /// libfido2 gets a ga token with the PIN for the lookup and an mc token for makeCredential, which succeeds.
    @Test func withAPINSshKeygenAsksForItAndSucceeds() async throws {
        let (harness, platform) = try await PinUvAuthTokenUseTests.withPIN()
        let uvToken = try #require(try await platform.uvToken(permissions: 0x02, rpID: Self.application).token)
        #expect(try await harness.send(.getAssertion, Self.lookup(platform, token: uvToken)).status == 0x2E)
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: nil)).status == 0x36)
        #expect(try harness.store.allCredentials().isEmpty)

        let lookupToken = try #require(
            try await platform.pinToken("1234", permissions: 0x02, rpID: Self.application).token)
        #expect(try await harness.send(.getAssertion, Self.lookup(platform, token: lookupToken)).status == 0x2E)
        let makeToken = try #require(
            try await platform.pinToken("1234", permissions: 0x01, rpID: Self.application).token)
        let (status, body) = try await harness.send(.makeCredential, Self.enroll(platform, token: makeToken))
        #expect(status == 0)
        #expect(try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags.contains(.userVerified))
        #expect(try harness.store.allCredentials().count == 1)
    }

    /// The reading, checked: a token spent on a lookup that found nothing still serves the makeCredential
    /// that follows when it has the mc permission (as Chromium's mc|ga tokens do), and a ga-only token never does.
    @Test func aLookupThatFindsNothingLeavesTheTokenUsable() async throws {
        let harness = Harness(configuration: .securityKey)
        let platform = PlatformDouble(harness: harness)
        let both = try #require(try await platform.uvToken(permissions: 0x03, rpID: Self.application).token)
        #expect(try await harness.send(.getAssertion, Self.lookup(platform, token: both)).status == 0x2E)
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: both)).status == 0)
        // Spent by the makeCredential.
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: both)).status == 0x33)

        let assertionOnly = try #require(try await platform.uvToken(permissions: 0x02, rpID: Self.application).token)
        #expect(try await harness.send(.getAssertion, Self.lookup(platform, token: assertionOnly)).status == 0)
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: assertionOnly)).status == 0x33)
    }

    /// `ssh-keygen -K`: libfido2 1.12 sends credential management as the prototype command 0x41 with a cm token.
    @Test func credentialManagementAnswersUnderItsPrototypeNumber() async throws {
        let (harness, platform) = try await PinUvAuthTokenUseTests.withPIN()
        let make = try #require(try await platform.pinToken("1234", permissions: 0x01, rpID: Self.application).token)
        #expect(try await harness.send(.makeCredential, Self.enroll(platform, token: make)).status == 0)
        let token = try #require(try await platform.pinToken("1234", permissions: 0x04).token)
        for command in [CTAPCommand.credentialManagementPreview, .credentialManagement] {
            let metadata = try await harness.send(
                command, [1: 1, 3: 2, 4: .bytes(platform.pinProtocol.authenticate(key: token, message: [1]))])
            #expect(metadata.status == 0)
            #expect(metadata.body?[1] == 1)
            let rps = try await harness.send(
                command, [1: 2, 3: 2, 4: .bytes(platform.pinProtocol.authenticate(key: token, message: [2]))])
            #expect(rps.status == 0)
            #expect(rps.body?[3]?["id"] == .text(Self.application))
        }
        #expect(try await harness.send(.credentialManagementPreview, [1: 1]).status == 0x36)
    }
}

/// `passkey serve --verbose` logs CTAPRequestSummary: the request's shape, never a value from the payload.
struct RequestSummaryTests {
    @Test func describesTheShapeAndNothingElse() throws {
        let platform = PlatformDouble(harness: Harness())
        let token = [UInt8](repeating: 0x5A, count: 32)
        let enroll =
            [CTAPCommand.makeCredential.rawValue] + OpenSSHEnrollmentTests.enroll(platform, token: token).encoded()
        let lookup = [CTAPCommand.getAssertion.rawValue] + OpenSSHEnrollmentTests.lookup(platform, token: nil).encoded()
        let pinHashEnc = [UInt8](repeating: 0xA7, count: 32)
        let pinToken =
            [CTAPCommand.clientPIN.rawValue] + CBORValue.map([1: 2, 2: 9, 6: .bytes(pinHashEnc), 9: 4]).encoded()
        let cases: [([UInt8], String)] = [
            (enroll, "makeCredential options {rk: true} pinUvAuthParam: present"),
            (lookup, "getAssertion options {up: false} pinUvAuthParam: absent"),
            (pinToken, "clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x04"),
            (
                [0x41] + CBORValue.map([1: 1, 3: 2, 4: .bytes([1, 2])]).encoded(),
                "credentialManagement (preview 0x41) getCredsMetadata pinUvAuthParam: present"
            ),
            ([0x0D] + CBORValue.map([1: 2]).encoded(), "config toggleAlwaysUv"),
            ([0x04], "getInfo"),
            ([0x01, 0xFF, 0x00], "makeCredential (parameters are not a CBOR map)"),
            ([0x50], "command 0x50"),
        ]
        for (message, expected) in cases {
            let text = CTAPRequestSummary(message: message).description
            #expect(text == expected)
            for secret in [
                OpenSSHEnrollmentTests.enrollClientDataHash, pinHashEnc, Array("ssh:probe".utf8), Array("openssh".utf8),
            ] {
                #expect(!text.contains(secret.hexString) && !text.contains(String(decoding: secret, as: UTF8.self)))
            }
        }
    }
}
