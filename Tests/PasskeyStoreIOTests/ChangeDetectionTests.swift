import CTAP2
import Crypto
import Foundation
import Testing

@testable import PasskeyStoreIO

/// `credential(id:)` answers from its cache without SQL while the database is unchanged; whatever another connection
/// or process commits must be seen by the very next lookup, and a changed row must never be served from memory.
struct ChangeDetectionTests {
    static let passphrase = "correct horse"

    /// Looks `id` up twice, so the second answer comes from the cache without SQL.
    private func warm(_ store: SQLiteCredentialStore, _ id: [UInt8]) throws {
        #expect(try store.credential(id: id) != nil)
        #expect(try store.credential(id: id) != nil)
    }

    @Test func theDatabaseVersionChangesWithEveryCommitOfAnyConnectionAndOnlyThen() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        let initial = try #require(store.databaseVersion, "a WAL store is watched for changes")
        try store.save(credential)
        let saved = try #require(store.databaseVersion)
        #expect(saved != initial, "the store's own commit")
        _ = try store.allCredentials()
        _ = try store.settings()
        #expect(store.databaseVersion == saved, "reads change nothing")

        let second = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        defer { second.close() }
        #expect(second.databaseVersion == saved, "both connections read the same shared header")
        try second.saveLargeBlobArray([1, 2, 3])
        let afterSecond = try #require(store.databaseVersion)
        #expect(afterSecond != saved, "a second connection's commit")

        try await execute("UPDATE large_blob_array SET serialized = x'04'", on: scratch.url())
        #expect(store.databaseVersion != afterSecond, "another process's commit")
    }

    @Test func aChangeThroughASecondConnectionIsSeenByTheNextLookup() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        try warm(store, credential.id)

        let second = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        defer { second.close() }
        #expect(try second.updateUser(credentialID: credential.id, userName: "bob", userDisplayName: nil))
        let renamed = try #require(try store.credential(id: credential.id))
        #expect(renamed.userName == "bob")
        #expect(renamed.userDisplayName == nil)
        #expect(renamed.privateKey.rawRepresentation == credential.privateKey.rawRepresentation)
        #expect(try store.credential(id: credential.id)?.userName == "bob", "the row as read again, now cached")

        #expect(try second.deleteCredential(id: credential.id))
        #expect(try store.credential(id: credential.id) == nil, "a deleted passkey was served from the cache")
        #expect(try store.credential(id: credential.id) == nil)
    }

    @Test func aPasskeyDeletedByAnotherProcessIsNoLongerReturned() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let kept = makeCredential(userHandle: [1])
        let deleted = makeCredential(userHandle: [2])
        try store.save(kept)
        try store.save(deleted)
        try warm(store, kept.id)
        try warm(store, deleted.id)
        try await execute("DELETE FROM credentials WHERE credential_id = x'\(hex(deleted.id))'", on: scratch.url())
        #expect(try store.credential(id: deleted.id) == nil)
        expectSame(try store.credential(id: kept.id), kept)
    }

    @Test(arguments: HostileStoreTests.rowChanges)
    func aRowChangedByAnotherProcessIsNeverServedFromTheCache(change: String) async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeFullyProtectedCredential()
        try store.save(credential)
        try warm(store, credential.id)
        try await execute("UPDATE credentials SET \(change)", on: scratch.url())
        #expect(try store.credential(id: credential.id) == nil, "\(change) was served from the cache")
        #expect(try store.credential(id: credential.id) == nil)
    }

    @Test func getAssertionSeesWhatAnotherConnectionOrProcessCommitted() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        let tampered = makeCredential(userHandle: [1])
        let deleted = makeCredential(userHandle: [2])
        try store.save(tampered)
        try store.save(deleted)
        func status(_ id: [UInt8]) async -> UInt8? {
            await authenticator.handle(
                CTAPClient.getAssertionMessage(
                    relyingPartyID: "example.com", clientDataHash: [UInt8](repeating: 0xCD, count: 32),
                    allowList: [id], userVerification: false)
            ).first
        }
        for id in [tampered.id, deleted.id] {
            #expect(await status(id) == 0)
            #expect(await status(id) == 0)
        }

        let second = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(try second.deleteCredential(id: deleted.id))
        second.close()
        #expect(await status(deleted.id) == CTAPError.noCredentials.rawValue)

        try await execute(
            "UPDATE credentials SET rp_name = 'Evil' WHERE credential_id = x'\(hex(tampered.id))'", on: scratch.url())
        #expect(await status(tampered.id) == CTAPError.noCredentials.rawValue, "a tampered row was used")
    }

    @Test func aStoreOutsideWALModeReadsEveryRow() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        store.close()
        try await python(
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('PRAGMA journal_mode = DELETE')",
            scratch.url().path)

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(reopened.databaseVersion == nil, "without a WAL index there is nothing to watch")
        try warm(reopened, credential.id)
        try await execute("UPDATE credentials SET user_name = 'mallory'", on: scratch.url())
        #expect(try reopened.credential(id: credential.id) == nil)
    }
}
