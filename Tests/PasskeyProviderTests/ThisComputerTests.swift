import CTAP2
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
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
}
