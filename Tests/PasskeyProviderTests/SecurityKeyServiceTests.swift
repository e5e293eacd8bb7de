import CBOR
import CTAP2
import CTAPHID
import PasskeyProvider
import PasskeyStoreIO
import Synchronization
import TestSupport
import Testing

/// The security key role in process: the authenticator a platform reaches, over a temporary store.
struct SecurityKeyServiceTests {
    static func store(_ directory: TemporaryDirectory) throws -> SQLiteCredentialStore {
        try SQLiteCredentialStore.create(at: directory.url("passkeys.sqlite"), passphrase: "pw", kdf: .testing)
    }

    static func getInfo(_ key: SecurityKeyService) async throws -> [CBORValue: CBORValue] {
        let response = await key.answer([CTAPCommand.getInfo.rawValue], keepalive: { _ in })
        try #require(response.first == 0x00)
        guard case .map(let info) = try CBORValue(decoding: Array(response.dropFirst())) else {
            Issue.record("getInfo is not a map")
            return [:]
        }
        return info
    }

    @Test func aSecurityKeyOffersBuiltInVerificationAndAPinOnlyKeyDoesNot() async throws {
        let directory = try TemporaryDirectory()
        let store = try Self.store(directory)
        let person = ScriptedPerson()
        let consent = ProviderConsent(interface: person, verifyPassphrase: { _ in true })
        let key = try SecurityKeyService(store: store, options: .init(), consent: consent, interface: person)
        let options = try await Self.getInfo(key)[4]
        guard case .map(let map)? = options else {
            Issue.record("no options in getInfo")
            return
        }
        #expect(map["uv"] == .bool(true))
        #expect(map["makeCredUvNotRqd"] == .bool(true))

        let pinOnly = try SecurityKeyService(
            store: store, options: .init(pinOnly: true), consent: consent, interface: person)
        guard case .map(let pinOnlyMap)? = try await Self.getInfo(pinOnly)[4] else {
            Issue.record("no options in getInfo")
            return
        }
        #expect(pinOnlyMap["uv"] == nil)
        #expect(SecurityKeyService.Options().configuration.transports == ["usb"])
        #expect(
            SecurityKeyService.Options(attestation: AttestationFormat.none).configuration.attestationFormat == .none)
        store.close()
    }

    @Test func servingLiftsABlockedUVCounterAndCountsThePasskeys() async throws {
        let directory = try TemporaryDirectory()
        let store = try Self.store(directory)
        var settings = try store.settings()
        settings.uvRetries = 0
        try store.saveSettings(settings)
        let person = ScriptedPerson()
        let key = try SecurityKeyService(
            store: store, options: .init(), consent: UnattendedApproval(), interface: person)
        #expect(try store.settings().uvRetries == AuthenticatorSettings.maximumUVRetries)
        #expect(key.passkeyCount == 0)
        store.close()
    }

    @Test func aRequestThatAsksThePersonSaysSoThroughTheKeepalive() async throws {
        let directory = try TemporaryDirectory()
        let store = try Self.store(directory)
        let person = ScriptedPerson([.yes])
        let consent = ProviderConsent(interface: person, verifyPassphrase: { _ in false })
        let key = try SecurityKeyService(store: store, options: .init(), consent: consent, interface: person)
        let statuses = Mutex<[KeepaliveStatus]>([])
        let request = CTAPClient.makeCredentialMessage(
            clientDataHash: [UInt8](repeating: 2, count: 32), relyingPartyID: "example.com", relyingPartyName: nil,
            userHandle: [1], userName: "alice", userDisplayName: nil, discoverable: false, userVerification: false)
        let response = await key.answer(request, keepalive: { status in statuses.withLock { $0.append(status) } })
        #expect(response.first == 0x00)
        #expect(statuses.withLock { $0 }.contains(.userPresenceNeeded))
        #expect(
            person.prompts == [
                .confirm(
                    .authenticator(
                        .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil)))
            ])
        #expect(try store.allCredentials().count == 1)
        store.close()
    }
}
