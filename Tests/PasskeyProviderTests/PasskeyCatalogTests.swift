import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing

/// Listing and deleting: the index without a passphrase, its rebuild, and which passkey a credential ID names.
struct PasskeyCatalogTests {
    static func catalog(_ directory: TemporaryDirectory, environment: [String: String], person: ScriptedPerson)
        -> PasskeyCatalog
    {
        PasskeyCatalog(
            access: StoreAccess(
                files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: person,
                environment: environment, canAsk: true))
    }

    static func credential(id: [UInt8], user: String) throws -> StoredCredential {
        StoredCredential(
            id: id, relyingPartyID: "example.com", relyingPartyName: nil, userHandle: Array(user.utf8), userName: user,
            userDisplayName: nil, privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: true,
            backupEligible: false, backupState: false, creationDate: Date(timeIntervalSince1970: 1_700_000_000))
    }

    static func populate(_ directory: TemporaryDirectory, _ credentials: [StoredCredential]) throws {
        let store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: "pw", kdf: .testing)
        for credential in credentials { try store.save(credential) }
        store.close()
    }

    @Test func theIndexNeedsNoPassphrase() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(directory, [try Self.credential(id: [1, 2, 3], user: "alice")])
        let person = ScriptedPerson()
        let index = try await Self.catalog(directory, environment: [:], person: person).index()
        #expect(index.identities.compactMap(\.userName) == ["alice"])
        #expect(person.prompts.isEmpty)
    }

    @Test func aMissingIndexIsRebuiltOnlyWithThePassphraseFromTheEnvironment() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(directory, [try Self.credential(id: [1, 2, 3], user: "alice")])
        try FileManager.default.removeItem(at: PasskeyFiles(store: directory.url("passkeys.sqlite")).identityIndex)
        let person = ScriptedPerson()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(directory, environment: [:], person: person).index()
        }
        #expect(error?.message.hasPrefix("the passkey index ") == true)
        #expect(error?.hint == "Unlock the store once to rebuild it, for example with `passkey list --verify`.")
        #expect(person.prompts.isEmpty)
        let rebuilt = try await Self.catalog(directory, environment: ["PASSKEY_PASSPHRASE": "pw"], person: person)
            .index()
        #expect(rebuilt.identities.compactMap(\.userName) == ["alice"])
    }

    @Test func listingWithoutAStoreSaysHowToMakeOne() async throws {
        let directory = try TemporaryDirectory()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(directory, environment: [:], person: ScriptedPerson()).index()
        }
        #expect(error?.message == "no passkey store at \(directory.url("passkeys.sqlite").path)")
    }

    @Test func deletingNeedsExactlyOneMatch() async throws {
        let directory = try TemporaryDirectory()
        // "abcd" reads as base64url [0x69, 0xb7, 0x1d] and as hex [0xab, 0xcd]: both exist, so it is ambiguous.
        try Self.populate(
            directory,
            [
                try Self.credential(id: [0x69, 0xB7, 0x1D], user: "alice"),
                try Self.credential(id: [0xAB, 0xCD], user: "bob"),
            ])
        let catalog = Self.catalog(directory, environment: ["PASSKEY_PASSPHRASE": "pw"], person: ScriptedPerson())
        let twice = await #expect(throws: ProviderError.self) {
            _ = try await catalog.delete(candidates: [[0x69, 0xB7, 0x1D], [0xAB, 0xCD]], text: "abcd")
        }
        #expect(twice?.message == "'abcd' names two passkeys, read as base64url and as hex")
        #expect(twice?.hint == "Prefix it with b64: or hex: to say which.")
        let none = await #expect(throws: ProviderError.self) {
            _ = try await catalog.delete(candidates: [[9, 9]], text: "hex:0909")
        }
        #expect(none?.message == "no passkey with credential ID hex:0909")
        #expect(try await catalog.verifiedEntries(relyingParty: nil).count == 2)

        let deleted = try await catalog.delete(candidates: [[0xAB, 0xCD]], text: "hex:abcd")
        guard case .intact(let credential) = deleted else {
            Issue.record("deleted \(deleted)")
            return
        }
        #expect(credential.userName == "bob")
        #expect(try await catalog.verifiedEntries(relyingParty: "example.com").count == 1)
        #expect(try await catalog.verifiedEntries(relyingParty: "other.example").isEmpty)
    }
}
