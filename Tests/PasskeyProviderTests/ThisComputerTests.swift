import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import RelyingPartyTestSupport
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// This computer's store as the browser sees it: listed without the passphrase, unlocked only when used.
struct ThisComputerTests {
    static func computer(_ directory: TemporaryDirectory, person: ScriptedPerson, environment: [String: String] = [:])
        -> ThisComputer
    {
        ThisComputer(
            access: StoreAccess(
                files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: person,
                environment: environment, canAsk: true),
            approval: ApprovalMode(yes: false, environment: [:]))
    }

    @Test func passkeysAreListedFromTheIndexWithoutThePassphrase() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(
            directory,
            [
                try PasskeyCatalogTests.credential(id: [1], user: "alice"),
                try PasskeyCatalogTests.credential(id: [2], user: "bob"),
            ])
        let person = ScriptedPerson()
        let authenticator = Self.computer(directory, person: person).authenticator(reportError: { _ in })
        let listed = try #require(await authenticator.credentials(forRelyingParty: "example.com"))
        #expect(Set(listed.map(\.userName)) == ["alice", "bob"])
        #expect(await authenticator.credentials(forRelyingParty: "other.example") == [])
        #expect(person.prompts.isEmpty)
        // Without an index the store is still offered, as "this computer", to be unlocked (which rebuilds it).
        try FileManager.default.removeItem(at: PasskeyFiles(store: directory.url("passkeys.sqlite")).identityIndex)
        #expect(await authenticator.credentials(forRelyingParty: "example.com") == nil)
    }

    @Test func theStoreIsUnlockedAndLockedForServingOnlyWhenUsed() async throws {
        let directory = try TemporaryDirectory()
        try PasskeyCatalogTests.populate(directory, [try PasskeyCatalogTests.credential(id: [1], user: "alice")])
        let computer = Self.computer(directory, person: ScriptedPerson(), environment: ["PASSKEY_PASSPHRASE": "pw"])
        let storeURL = directory.url("passkeys.sqlite")
        let authenticator = computer.authenticator(reportError: { _ in })
        // Listed: nothing locked.
        _ = await authenticator.credentials(forRelyingParty: "example.com")
        // The lock is free (it is released when the value goes).
        _ = try StoreLock.acquire(forStore: storeURL)
        let session = try await authenticator.open(for: .get)
        // Used: the store stays locked for serving while this computer is in use, even after the session.
        #expect(throws: CredentialStoreError.self) { _ = try StoreLock.acquire(forStore: storeURL) }
        await session.close()
        #expect(throws: CredentialStoreError.self) { _ = try StoreLock.acquire(forStore: storeURL) }
    }

    @Test func aPickedPasswordIsReadByUnlockingAndRankedFirst() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: "pw", kdf: .testing)
        let service = try #require(PasswordService("example.com"))
        try store.savePassword("first secret", userName: "alice", service: service)
        try store.savePassword("second secret", userName: "bob", service: service)
        store.close()
        let person = ScriptedPerson([.type("pw")])
        let computer = Self.computer(directory, person: person)
        let logins = computer.passwords(relyingPartyID: "example.com")
        // The newest login leads until another is used.
        #expect(logins.map(\.userName) == ["bob", "alice"])
        #expect(person.prompts.isEmpty)
        let alice = try #require(logins.first { $0.userName == "alice" })
        let credential = try await computer.password(for: alice)
        #expect(credential.password == "first secret")
        #expect(person.prompts.count == 1)
        #expect(computer.passwords(relyingPartyID: "example.com").first?.userName == "alice")
    }

    @Test func aPasswordThatIsGoneIsAClearError() async throws {
        let directory = try TemporaryDirectory()
        try SQLiteCredentialStore.create(at: directory.url("passkeys.sqlite"), passphrase: "pw", kdf: .testing).close()
        let computer = Self.computer(directory, person: ScriptedPerson(), environment: ["PASSKEY_PASSPHRASE": "pw"])
        let error = await #expect(throws: ProviderError.self) {
            _ = try await computer.password(
                for: PasswordLogin(id: [9], userName: "carol", service: "example.com"))
        }
        #expect(error?.message == "the saved password for \"carol\" is gone or damaged")
    }

    // MARK: Issue 23: choosers shown once the store is unlocked

    /// The engine's chooser as the person sees it: every prompt, dismissed.
    final class RecordingChooser: ClientUserInterface {
        let prompts = Mutex<[ChoicePrompt]>([])
        func choose(_ prompt: ChoicePrompt) async -> Int? {
            prompts.withLock { $0.append(prompt) }
            return nil
        }
        func confirm(_ question: ClientQuestion) async -> Bool { false }
        func collectPIN(_ request: PINRequest) async -> String? { nil }
        func notify(_ event: ClientEvent) async {}
    }

    /// Rewrites the identity index file as an attacker who can write it would: `edit` gets every identity.
    static func tamperWithIndex(_ directory: TemporaryDirectory, _ edit: (inout [[String: Any]]) -> Void) throws {
        let url = PasskeyFiles(store: directory.url("passkeys.sqlite")).identityIndex
        var document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var identities = try #require(document["identities"] as? [[String: Any]])
        edit(&identities)
        document["identities"] = identities
        try OwnerOnlyFile.write(
            [UInt8](try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])), to: url)
    }

    /// `client get --link` (or `--phone`) unlocks the store before the chooser is shown; whoever can write the
    /// identity index then swaps two accounts' names, renames one, and adds one the store does not have. The chooser
    /// shows the sealed rows' names, matched by credential ID, and leaves the invented one out; the saved logins too.
    @Test func aRewrittenIndexChangesNothingTheChooserShowsOnceTheStoreIsUnlocked() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: "pw", kdf: .testing)
        for (id, user, display) in [([UInt8]([1]), "alice", "Alice A."), ([2], "bob", "Bob B.")] {
            try store.save(
                StoredCredential(
                    id: id, relyingPartyID: "example.com", relyingPartyName: nil, userHandle: Array(user.utf8),
                    userName: user, userDisplayName: display,
                    privateKey: P256.Signing.PrivateKey(compactRepresentable: false), isDiscoverable: true,
                    backupEligible: false, backupState: false, creationDate: Date(timeIntervalSince1970: 1_700_000_000)
                ))
        }
        try store.savePassword("secret", userName: "alice", service: try #require(PasswordService("example.com")))
        store.close()

        let person = ScriptedPerson()
        let unlocked = UnlockedStore(
            access: StoreAccess(
                files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: person,
                environment: ["PASSKEY_PASSPHRASE": "pw"], canAsk: false))
        let computer = ThisComputer(store: unlocked, approval: ApprovalMode(yes: false, environment: [:]))
        let service = BrowserService(
            links: ComputerLinks(store: unlocked, interface: person),
            factory: BrowserAuthenticatorFactory(
                thisComputer: { computer.authenticator(reportError: { _ in }) },
                phone: { _ in ComputerServiceTests.FakeAuthenticator(kind: .hybrid) },
                linkedPhone: { _, _, _ in ComputerServiceTests.FakeAuthenticator(kind: .hybrid) },
                securityKey: { _ in ComputerServiceTests.FakeAuthenticator(kind: .securityKey) }))
        let authenticators = try await service.authenticators(
            for: BrowserAuthenticators(thisComputer: true, phone: .qrCode(link: true)))
        #expect(unlocked.current != nil)

        try Self.tamperWithIndex(directory) { identities in
            for index in identities.indices where identities[index]["kind"] as? String != "password" {
                switch identities[index]["userName"] as? String {
                case "alice":
                    identities[index]["userName"] = "bob"
                    identities[index]["userDisplayName"] = "Bob B."
                case "bob":
                    identities[index]["userName"] = "alice"
                    identities[index]["userDisplayName"] = "Mallory"
                default: break
                }
            }
            for index in identities.indices where identities[index]["kind"] as? String == "password" {
                identities[index]["userName"] = "mallory"
            }
            var invented = identities[0]
            invented["credentialID"] = "CQkJ"
            invented["userName"] = "carol"
            invented["kind"] = "passkey"
            identities.append(invented)
        }
        // The attack works on the index itself: a reader of the file sees the rewritten names.
        let tampered = try CredentialIdentityIndex.read(forStore: directory.url("passkeys.sqlite"))
        #expect(
            tampered.identities(forRelyingParty: "example.com").compactMap(\.userName).sorted() == [
                "alice", "bob", "carol",
            ])

        let chooser = RecordingChooser()
        let engine = ClientEngine(
            environment: ClientEnvironment(
                authenticators: authenticators, userInterface: chooser,
                relyingPartyIDChecker: HostRelyingPartyIDChecker()))
        await #expect(throws: ClientError.self) {
            _ = try await engine.get(
                PublicKeyCredentialRequestOptions(challenge: [UInt8](repeating: 7, count: 32)),
                origin: "https://example.com")
        }

        let prompt = try #require(chooser.prompts.withLock { $0.first })
        let shown = prompt.choices.compactMap { choice -> (id: [UInt8], user: String?, display: String?)? in
            guard case .account(let metadata, on: .platform) = choice else { return nil }
            return (metadata.credentialID, metadata.userName, metadata.userDisplayName)
        }
        #expect(shown.count == 2)
        #expect(shown.first { $0.id == [1] }.map { [$0.user, $0.display] } == ["alice", "Alice A."])
        #expect(shown.first { $0.id == [2] }.map { [$0.user, $0.display] } == ["bob", "Bob B."])
        #expect(!shown.contains { $0.id == [9, 9, 9] })
        #expect(computer.passwords(relyingPartyID: "example.com").map(\.userName) == ["alice"])
    }
}
