import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing
import WebAuthn

/// The `CredentialStore` semantics on disk: round trips, order, replacement, deletion, concurrency.
struct SQLiteCredentialStoreTests {
    @Test func everyAlgorithmsKeyIsKeptWithItsAlgorithmAndSigns() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let seed = randomBytes(32)
        let keys: [CredentialPrivateKey] = [
            .p256(P256.Signing.PrivateKey(), algorithm: .es256), .p256(P256.Signing.PrivateKey(), algorithm: .esp256),
            .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: seed), algorithm: .eddsa),
            .ed25519(Curve25519.Signing.PrivateKey(), algorithm: .ed25519),
        ]
        let credentials = keys.map { key in
            StoredCredential(
                id: randomBytes(16), relyingPartyID: "example.com", userHandle: randomBytes(8), privateKey: key,
                isDiscoverable: true, backupEligible: true, backupState: true, creationDate: Date())
        }
        for credential in credentials { try store.save(credential) }
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let message = Array("authenticator data".utf8)
        for credential in credentials {
            let loaded = try #require(try reopened.credential(id: credential.id))
            expectSame(loaded, credential)
            #expect(loaded.privateKey.algorithm == credential.privateKey.algorithm)
            #expect(loaded.privateKey.publicKey == credential.privateKey.publicKey)
            let signature = try loaded.privateKey.signature(message, [])
            #expect(credential.privateKey.publicKey.isValidSignature(signature, for: message))
        }
    }

    @Test func roundTripKeepsEveryFieldAndKeysStillSign() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let full = StoredCredential(
            id: randomBytes(32),
            relyingPartyID: "login.example.com",
            relyingPartyName: "Example 🔑 \u{0} Bank",
            userHandle: randomBytes(64),
            userName: "zoë@example.com",
            userDisplayName: "Zoë \u{0} Ångström",
            privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: true,
            backupEligible: true,
            backupState: true,
            creationDate: Date(timeIntervalSince1970: 1_712_345_678.901)
        )
        let sparse = StoredCredential(
            id: randomBytes(16),
            relyingPartyID: "example.org",
            userHandle: [],
            privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: false,
            backupEligible: true,
            backupState: false,
            creationDate: Date(timeIntervalSince1970: 0)
        )
        try store.save(full)
        try store.save(sparse)
        expectSame(try store.credential(id: full.id), full)
        store.close()

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let loadedFull = try reopened.credential(id: full.id)
        let loadedSparse = try reopened.credential(id: sparse.id)
        expectSame(loadedFull, full)
        expectSame(loadedSparse, sparse)
        #expect(loadedSparse?.relyingPartyName == nil)
        #expect(loadedSparse?.userName == nil)
        #expect(loadedSparse?.userDisplayName == nil)
        #expect(try reopened.credential(id: randomBytes(16)) == nil)

        let message = Array("client data hash and authenticator data".utf8)
        for (loaded, original) in [(loadedFull, full), (loadedSparse, sparse)] {
            let signature = try #require(loaded).privateKey.signature(message, [])
            #expect(original.privateKey.publicKey.isValidSignature(signature, for: message))
        }
    }

    @Test func newestFirstWithinEachRelyingPartyAndGroupedByRelyingParty() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let reference = InMemoryCredentialStore()
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        // Interleaved relying parties, increasing dates, and two credentials created in the same millisecond.
        let saved = [
            makeCredential(relyingParty: "b.example", userHandle: [1], date: base),
            makeCredential(relyingParty: "a.example", userHandle: [1], date: base + 1),
            makeCredential(relyingParty: "b.example", userHandle: [2], date: base + 2),
            makeCredential(relyingParty: "a.example", userHandle: [2], date: base + 3),
            makeCredential(relyingParty: "b.example", userHandle: [3], date: base + 3),
            makeCredential(relyingParty: "b.example", userHandle: [4], discoverable: false, date: base + 3),
            makeCredential(relyingParty: "c.example", userHandle: [1], date: base + 4),
        ]
        for credential in saved {
            try store.save(credential)
            try reference.save(credential)
        }
        let forB = try store.credentials(forRelyingParty: "b.example").map(\.id)
        #expect(forB == [saved[5].id, saved[4].id, saved[2].id, saved[0].id])
        #expect(forB == (try reference.credentials(forRelyingParty: "b.example").map(\.id)))
        let all = try store.allCredentials().map(\.id)
        #expect(all == [saved[3].id, saved[1].id, saved[5].id, saved[4].id, saved[2].id, saved[0].id, saved[6].id])
        #expect(all == (try reference.allCredentials().map(\.id)))
        #expect(try store.credentials(forRelyingParty: "nobody.example").isEmpty)

        // A credential saved last but made earlier (an import, say) sorts by its creation date.
        let imported = makeCredential(relyingParty: "b.example", userHandle: [9], date: base - 100)
        try store.save(imported)
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let afterImport = try reopened.credentials(forRelyingParty: "b.example").map(\.id)
        #expect(afterImport == [saved[5].id, saved[4].id, saved[2].id, saved[0].id, imported.id])
    }

    @Test func discoverableSaveReplacesTheSameUserOnlyAtomically() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let old = makeCredential(relyingParty: "example.com", userHandle: [7])
        let otherUser = makeCredential(relyingParty: "example.com", userHandle: [8])
        let nonDiscoverable = makeCredential(relyingParty: "example.com", userHandle: [7], discoverable: false)
        let otherParty = makeCredential(relyingParty: "example.net", userHandle: [7])
        for credential in [old, otherUser, nonDiscoverable, otherParty] {
            try store.save(credential)
        }
        #expect(try store.credential(id: old.id) != nil)  // now in the key cache

        let replacement = makeCredential(relyingParty: "example.com", userHandle: [7], date: Date())
        try store.save(replacement)
        #expect(try store.credential(id: old.id) == nil)
        let remaining = Set(try store.allCredentials().map(\.id))
        #expect(remaining == [otherUser.id, nonDiscoverable.id, otherParty.id, replacement.id])

        // A non-discoverable credential replaces nothing.
        let second = makeCredential(relyingParty: "example.com", userHandle: [7], discoverable: false)
        try store.save(second)
        #expect(try store.allCredentials().count == 5)
        store.close()

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let afterReopen = Set(try reopened.allCredentials().map(\.id))
        #expect(afterReopen == [otherUser.id, nonDiscoverable.id, otherParty.id, replacement.id, second.id])
    }

    @Test func deleteOneAndDeleteAll() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let first = makeCredential(userHandle: [1])
        let second = makeCredential(userHandle: [2])
        let third = makeCredential(relyingParty: "example.org", userHandle: [3])
        for credential in [first, second, third] {
            try store.save(credential)
        }
        #expect(try store.credential(id: first.id) != nil)
        #expect(try store.deleteCredential(id: first.id))
        #expect(try store.deleteCredential(id: first.id) == false)
        #expect(try store.deleteCredential(id: randomBytes(16)) == false)
        #expect(try store.credential(id: first.id) == nil)
        #expect(try store.allCredentials().map(\.id) == [second.id, third.id])
        store.close()

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.allCredentials().map(\.id) == [second.id, third.id])
        #expect(try reopened.credential(id: third.id) != nil)
        try reopened.deleteAll()
        #expect(try reopened.allCredentials().isEmpty)
        #expect(try reopened.credential(id: third.id) == nil)
        // The store stays usable after a reset.
        let fourth = makeCredential(userHandle: [4])
        try reopened.save(fourth)
        reopened.close()
        let again = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try again.allCredentials().map(\.id) == [fourth.id])
    }

    @Test func concurrentSavesFromManyTasksAllPersist() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credentials = (0..<64).map { index in
            makeCredential(relyingParty: "rp\(index % 4).example", userHandle: [UInt8(index)])
        }
        // Through the protocol, as the authenticator holds it.
        let shared: any CredentialStore = store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for credential in credentials {
                group.addTask {
                    try await shared.save(credential)
                    // Reads interleave with the writes of other tasks.
                    let loaded = try await shared.credential(id: credential.id)
                    #expect(loaded?.privateKey.rawRepresentation == credential.privateKey.rawRepresentation)
                    _ = try await shared.credentials(forRelyingParty: credential.relyingPartyID)
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.allCredentials().count == 64)
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let loaded = try reopened.allCredentials()
        #expect(Set(loaded.map(\.id)) == Set(credentials.map(\.id)))
        for original in credentials {
            expectSame(try reopened.credential(id: original.id), original)
        }
    }

    @Test func invalidCredentialsAreRefusedAndChangeNothing() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let kept = makeCredential()
        try store.save(kept)
        var emptyID = makeCredential(userHandle: [5])
        emptyID.id = []
        var longHandle = makeCredential(userHandle: randomBytes(65))
        longHandle.relyingPartyID = "example.com"
        var badDate = makeCredential(userHandle: [6])
        badDate.creationDate = Date(timeIntervalSince1970: .infinity)
        // Same RP and user as `kept`: were the save to go ahead, `kept` would be replaced.
        var replacing = makeCredential(userHandle: kept.userHandle)
        replacing.id = []
        for bad in [emptyID, longHandle, badDate, replacing] {
            #expect(throws: CredentialStoreError.self) { try store.save(bad) }
        }
        #expect(try store.allCredentials().map(\.id) == [kept.id])
    }

    @Test func aFailureInsideAWriteRollsBackTheWholeTransaction() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let replaceable = makeCredential(relyingParty: "example.com", userHandle: [1])
        let bystander = makeCredential(relyingParty: "example.org", userHandle: [2], discoverable: false)
        try store.save(replaceable)
        try store.save(bystander)

        // This save first deletes `replaceable` (same RP and user), then its insert violates the unique
        // credential ID index because it reuses `bystander`'s ID: the delete must be rolled back with it.
        var clash = makeCredential(relyingParty: "example.com", userHandle: [1])
        clash.id = bystander.id
        let error = #expect(throws: CredentialStoreError.self) { try store.save(clash) }
        #expect(error?.message.contains("UNIQUE") == true)
        #expect(error?.message.contains(hex(bystander.id.prefix(8))) == true)

        expectSame(try store.credential(id: replaceable.id), replaceable)
        expectSame(try store.credential(id: bystander.id), bystander)
        #expect(try store.allCredentials().count == 2)

        // The connection is out of the failed transaction: the next write works and persists.
        let later = makeCredential(relyingParty: "example.net", userHandle: [3])
        try store.save(later)
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(Set(try reopened.allCredentials().map(\.id)) == [replaceable.id, bystander.id, later.id])
    }

    @Test func aClosedStoreRefusesCalls() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        store.close()
        store.close()
        #expect(throws: CredentialStoreError.self) { try store.allCredentials() }
        #expect(throws: CredentialStoreError.self) { try store.save(makeCredential()) }
        #expect(try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse").allCredentials().isEmpty)
    }

    @Test func openOrCreateMakesTheStoreOnceThenOpensIt() async throws {
        let scratch = try Scratch()
        let url = scratch.url("nested/deeper/passkeys.sqlite")
        let first = try SQLiteCredentialStore.openOrCreate(at: url, passphrase: "pw", kdf: .testing)
        let credential = makeCredential()
        try first.save(credential)
        first.close()
        let second = try SQLiteCredentialStore.openOrCreate(at: url, passphrase: "pw", kdf: .default)
        // The parameters come from the file, not from the argument.
        #expect(second.kdfParameters == .testing)
        expectSame(try second.credential(id: credential.id), credential)
        #expect(permissions(of: url.deletingLastPathComponent()) == 0o700)
        #expect(permissions(of: url.deletingLastPathComponent().deletingLastPathComponent()) == 0o700)
        expectStoreError(.wrongPassphrase) {
            try SQLiteCredentialStore.openOrCreate(at: url, passphrase: "not pw", kdf: .testing)
        }
    }
}
