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
    static func catalog(
        _ directory: TemporaryDirectory, environment: [String: String], person: ScriptedPerson, canAsk: Bool = true
    ) -> PasskeyCatalog {
        PasskeyCatalog(
            access: StoreAccess(
                files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: person,
                environment: environment, canAsk: canAsk))
    }

    static func bytes(_ url: URL) -> [UInt8] { Array(FileManager.default.contents(atPath: url.path) ?? Data()) }

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

    @Test func aMissingOrDamagedIndexSaysHowToRebuildItAndUnlockingRebuildsItAsItWas() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(
            directory,
            [try Self.credential(id: [1, 2, 3], user: "alice"), try Self.credential(id: [4, 5, 6], user: "bob")])
        let index = PasskeyFiles(store: directory.url("passkeys.sqlite")).identityIndex
        let before = Self.bytes(index)
        #expect(!before.isEmpty)
        try FileManager.default.removeItem(at: index)
        let person = ScriptedPerson()
        let withoutPassphrase = Self.catalog(directory, environment: [:], person: person, canAsk: false)
        let withPassphrase = Self.catalog(directory, environment: ["PASSKEY_PASSPHRASE": "pw"], person: person)

        let missing = await #expect(throws: ProviderError.self) { _ = try await withoutPassphrase.index() }
        #expect(missing?.message.hasPrefix("the passkey index ") == true)
        #expect(missing?.message.contains(" is missing or damaged") == true)
        #expect(missing?.hint == "Unlock the store once to rebuild it, for example with `passkey list --verify`.")
        #expect(missing?.exitStatus == 1)

        // Unlocking the store (`list --verify`) rebuilds it as it was; then it needs no passphrase again.
        #expect(try await withPassphrase.verifiedEntries(relyingParty: nil).count == 2)
        #expect(Self.bytes(index) == before)
        #expect(try await withoutPassphrase.index().identities.compactMap(\.userName).sorted() == ["alice", "bob"])

        // Damaged: the same error; with PASSKEY_PASSPHRASE set, reading it rebuilds it, owner-only.
        try Data(
            #"{"format": "passkey-credential-identity-index", "version": 1, "identities": [{"rank": "x"}]}"#.utf8
        ).write(to: index)
        let damaged = await #expect(throws: ProviderError.self) { _ = try await withoutPassphrase.index() }
        #expect(damaged?.message.hasPrefix("the passkey index ") == true)
        #expect(damaged?.message.contains(" is missing or damaged") == true)
        #expect(damaged?.hint == missing?.hint)
        #expect(damaged?.exitStatus == 1)
        #expect(try await withPassphrase.index().identities.compactMap(\.userName).sorted() == ["alice", "bob"])
        let mode = try FileManager.default.attributesOfItem(atPath: index.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(person.prompts.isEmpty)
    }

    /// `list` on stores it cannot read: a clear error each time (every `ProviderError` is printed as `passkey: …`),
    /// and nothing made or changed.
    @Test func badStoresAreClearErrorsAndStayUntouched() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(
            directory,
            [try Self.credential(id: [1, 2, 3], user: "alice"), try Self.credential(id: [4, 5, 6], user: "bob")])
        let store = directory.url("passkeys.sqlite")
        let before = Self.bytes(store)
        let person = ScriptedPerson()

        // `list --verify` with the wrong passphrase.
        let wrong = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(
                directory, environment: ["PASSKEY_PASSPHRASE": "not the passphrase"], person: person, canAsk: false
            ).verifiedEntries(relyingParty: nil)
        }
        #expect(wrong?.message.lowercased().contains("passphrase") == true)
        #expect(wrong?.exitStatus == 1)
        #expect(Self.bytes(store) == before)

        // `list --verify` with no passphrase and nobody to ask.
        let unasked = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(directory, environment: [:], person: person, canAsk: false)
                .verifiedEntries(relyingParty: nil)
        }
        #expect(unasked?.hint?.contains("PASSKEY_PASSPHRASE") == true)
        #expect(unasked?.exitStatus == 1)
        #expect(Self.bytes(store) == before)

        // `list` (the passphrase set) on a file that is no store: refused, left as it was.
        let other = try TemporaryDirectory()
        var random = SeededRandom(seed: 4096)
        let garbage = try other.write(random.bytes(4096), to: "passkeys.sqlite")
        let garbageBefore = Self.bytes(URL(fileURLWithPath: garbage))
        let corrupt = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(other, environment: ["PASSKEY_PASSPHRASE": "pw"], person: person).index()
        }
        #expect(corrupt.map { !$0.message.isEmpty } == true)
        #expect(corrupt?.exitStatus == 1)
        #expect(Self.bytes(URL(fileURLWithPath: garbage)) == garbageBefore)

        // `list` where there is no store: how to make one, and nothing made.
        let empty = try TemporaryDirectory()
        let absent = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(empty, environment: ["PASSKEY_PASSPHRASE": "pw"], person: person).index()
        }
        #expect(absent?.message.hasPrefix("no passkey store at ") == true)
        #expect(absent?.hint?.contains("passkey init") == true)
        #expect(!FileManager.default.fileExists(atPath: empty.url("passkeys.sqlite").path))
        #expect(person.prompts.isEmpty)
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
        let yes = ApprovalMode(yes: true, environment: [:])
        let twice = await #expect(throws: ProviderError.self) {
            _ = try await catalog.delete(candidates: [[0x69, 0xB7, 0x1D], [0xAB, 0xCD]], text: "abcd", mode: yes)
        }
        #expect(twice?.message == "'abcd' names two passkeys, read as base64url and as hex")
        #expect(twice?.hint == "Prefix it with b64: or hex: to say which.")
        let none = await #expect(throws: ProviderError.self) {
            _ = try await catalog.delete(candidates: [[9, 9]], text: "hex:0909", mode: yes)
        }
        #expect(none?.message == "no passkey with credential ID hex:0909")
        #expect(try await catalog.verifiedEntries(relyingParty: nil).count == 2)

        let deleted = try await catalog.delete(candidates: [[0xAB, 0xCD]], text: "hex:abcd", mode: yes)
        guard case .intact(let credential) = deleted else {
            Issue.record("deleted \(deleted)")
            return
        }
        #expect(credential.userName == "bob")
        #expect(try await catalog.verifiedEntries(relyingParty: "example.com").count == 1)
        #expect(try await catalog.verifiedEntries(relyingParty: "other.example").isEmpty)
    }

    /// Issue 24: `delete` did not confirm. It now shows which passkey it is and asks; a no, or nobody to ask without
    /// `--yes`, deletes nothing.
    @Test func deletingShowsThePasskeyAndAsksFirst() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(directory, [try Self.credential(id: [0xAB, 0xCD], user: "bob")])
        let environment = ["PASSKEY_PASSPHRASE": "pw"]
        let ask = ApprovalMode(yes: false, environment: [:])
        let question = ProviderQuestion.deletePasskey(relyingPartyID: "example.com", account: "bob")

        let declining = ScriptedPerson([.no])
        let declined = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(directory, environment: environment, person: declining).delete(
                candidates: [[0xAB, 0xCD]], text: "hex:abcd", mode: ask)
        }
        #expect(declined?.message == "not deleted; nothing changed")
        #expect(declined?.exitStatus == ExitStatus.declined)
        #expect(declining.prompts == [.confirm(question)])

        let nobody = ScriptedPerson()
        let unasked = await #expect(throws: ProviderError.self) {
            _ = try await Self.catalog(directory, environment: environment, person: nobody, canAsk: false).delete(
                candidates: [[0xAB, 0xCD]], text: "hex:abcd", mode: ask)
        }
        #expect(unasked?.message == "this needs your confirmation")
        #expect(nobody.prompts.isEmpty)
        let catalog = Self.catalog(directory, environment: environment, person: ScriptedPerson())
        #expect(try await catalog.verifiedEntries(relyingParty: nil).count == 1)

        let agreeing = ScriptedPerson([.yes])
        _ = try await Self.catalog(directory, environment: environment, person: agreeing).delete(
            candidates: [[0xAB, 0xCD]], text: "hex:abcd", mode: ask)
        #expect(agreeing.prompts == [.confirm(question)])
        #expect(try await catalog.verifiedEntries(relyingParty: nil).isEmpty)
    }

    @Test func renameReplacesWhatIsGivenKeepsTheRestAndTheKeyStillSigns() async throws {
        let directory = try TemporaryDirectory()
        let credential = try Self.credential(id: [0xAB, 0xCD], user: "alice")
        try Self.populate(directory, [credential, try Self.credential(id: [1, 2, 3], user: "bob")])
        let catalog = Self.catalog(directory, environment: ["PASSKEY_PASSPHRASE": "pw"], person: ScriptedPerson())
        let (before, after) = try await catalog.rename(
            candidates: [[0xAB, 0xCD]], text: "hex:abcd", name: nil, displayName: "Alice Liddell")
        #expect(before.userName == "alice" && before.userDisplayName == nil)
        #expect(after.userName == "alice" && after.userDisplayName == "Alice Liddell")
        _ = try await catalog.rename(
            candidates: [[0xAB, 0xCD]], text: "hex:abcd", name: "alice@example.com", displayName: nil)
        let entries = try await catalog.verifiedEntries(relyingParty: nil)
        let renamed = try #require(
            entries.compactMap { if case .intact(let found) = $0, found.id == [0xAB, 0xCD] { found } else { nil } }
                .first)
        #expect(renamed.userName == "alice@example.com" && renamed.userDisplayName == "Alice Liddell")
        #expect(renamed.privateKey.storedRepresentation == credential.privateKey.storedRepresentation)
        // The index (what `passkey list` reads without the passphrase) says the same.
        let listed = try await catalog.index().identities.first { $0.credentialID == [0xAB, 0xCD] }
        #expect(listed?.userName == "alice@example.com" && listed?.userDisplayName == "Alice Liddell")
        // The other passkey is untouched.
        #expect(entries.contains { if case .intact(let other) = $0 { other.userName == "bob" } else { false } })
    }

    @Test func renameRefusesBadNamesAndUnknownIDsAndChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        try Self.populate(directory, [try Self.credential(id: [0xAB, 0xCD], user: "alice")])
        let before = Self.bytes(directory.url("passkeys.sqlite"))
        let catalog = Self.catalog(directory, environment: ["PASSKEY_PASSPHRASE": "pw"], person: ScriptedPerson())
        let cases: [(String?, String?, [[UInt8]], String)] = [
            (nil, nil, [[0xAB, 0xCD]], "nothing to rename"),
            ("", nil, [[0xAB, 0xCD]], "the new name is empty"),
            (
                String(repeating: "é", count: 33), nil, [[0xAB, 0xCD]],
                "the new name is 66 bytes long; a passkey keeps at most 64"
            ),
            (nil, "Alice\u{1B}[2J", [[0xAB, 0xCD]], "the new display name holds a control or format character"),
            (nil, "\u{202E}ecilA", [[0xAB, 0xCD]], "the new display name holds a control or format character"),
            ("carol", nil, [[9, 9]], "no passkey with credential ID hex:abcd"),
        ]
        for (name, displayName, candidates, message) in cases {
            let error = await #expect(throws: ProviderError.self) {
                _ = try await catalog.rename(
                    candidates: candidates, text: "hex:abcd", name: name, displayName: displayName)
            }
            #expect(error?.message == message)
        }
        #expect(Self.bytes(directory.url("passkeys.sqlite")) == before)
        #expect(try AccountNames.checked(String(repeating: "a", count: 64), field: "name").count == 64)
    }
}

extension PasskeyCatalog {
    /// The store's own rows, damaged ones included, hidden ones left out: `listing` with `verify`, as `list --verify`.
    func verifiedEntries(relyingParty: String?) async throws(ProviderError) -> [CredentialEntry] {
        try await listing(relyingParty: relyingParty, verify: true, notes: false, hidden: false).entries ?? []
    }
}
