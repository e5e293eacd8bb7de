import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import WebAuthn

/// What the authenticator does for issue 27: a passkey a signal hid is not discovered, and the in-process platform
/// authenticator makes a passkey without presence for an automatic upgrade, where no other configuration does.
struct SilentCreationAndHidingTests {
    static func stored(_ user: [UInt8], hidden: Date? = nil) -> StoredCredential {
        var credential = StoredCredential(
            id: user + [UInt8](repeating: 7, count: 15), relyingPartyID: "example.com", userHandle: user,
            userName: "user\(user[0])", privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: true, backupEligible: true, backupState: true,
            creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(user[0])))
        credential.hiddenDate = hidden
        return credential
    }

    @Test func aHiddenPasskeyIsNotDiscoveredButAnAllowListStillNamesIt() async throws {
        let store = InMemoryCredentialStore()
        let shown = Self.stored([1])
        let hidden = Self.stored([2], hidden: Date(timeIntervalSince1970: 1_800_000_000))
        try store.save(shown)
        try store.save(hidden)
        let harness = Harness(store: store)

        let (status, body) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(status == 0)
        #expect(body?[1]?[CBORValue.text("id")]?.bytesValue == shown.id)
        #expect(body?[5] == nil, "only one credential is discovered, so there is no count")

        // The relying party that names it still knows it: a signal is not a deletion.
        let (named, answer) = try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [hidden.id]))
        #expect(named == 0)
        #expect(answer?[1]?[CBORValue.text("id")]?.bytesValue == hidden.id)

        // With only hidden passkeys, there is nothing to discover.
        let onlyHidden = InMemoryCredentialStore()
        try onlyHidden.save(hidden)
        #expect(try await Harness(store: onlyHidden).send(.getAssertion, Fixtures.getAssertion()).status == 0x2E)
    }

    @Test func onlyThePlatformConfigurationMakesAPasskeyWithoutPresence() async throws {
        // A security key (the default) and a phone refuse the option, as CTAP 2.1 §6.1.2 step 5 says.
        for configuration in [AuthenticatorConfiguration(), .hybridPhone(oneRequestPerSession: false)] {
            let harness = Harness(configuration: configuration)
            let (status, _) = try await harness.send(
                .makeCredential, Fixtures.makeCredential(options: ["rk": true, "up": false]))
            #expect(status == 0x2C)
            #expect(harness.user.requests.isEmpty)
            #expect(try harness.store.allCredentials().isEmpty)
        }

        let harness = Harness(configuration: .platform)
        let (status, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: ["rk": true, "up": false]))
        #expect(status == 0)
        #expect(harness.user.requests.isEmpty, "nobody is asked")
        let authenticatorData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        #expect(authenticatorData.flags == [.backupEligible, .backupState, .attestedCredentialData])
        #expect(try harness.store.allCredentials().count == 1)
    }

    @Test func aSilentRequestAsksForNothingElseEither() async throws {
        let harness = Harness(configuration: .platform)
        // With uv, or a token, it is not silent: refused.
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(options: ["up": false, "uv": true])).status
                == 0x2C)
        // An excluded credential is reported without asking for presence first.
        let existing = Self.stored([1, 2, 3, 4])
        try harness.store.save(existing)
        let (status, _) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: ["rk": true, "up": false], excludeList: [existing.id]))
        #expect(status == 0x19)
        #expect(harness.user.requests.isEmpty)
    }
}
