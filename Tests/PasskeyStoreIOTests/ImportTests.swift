import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

/// `importCredentials`: one transaction, duplicates by credential ID skipped and counted, nothing replaced, and the
/// identity index in step.
struct ImportTests {
    @Test func addsAllSkipsDuplicatesAndKeepsTheIndexInStep() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let existing = makeCredential(userHandle: [9])
        try store.save(existing)
        // Same relying party and user handle as `existing`, other ID: an import keeps both (save would replace).
        let sameUser = makeCredential(userHandle: [9])
        let other = makeCredential(relyingParty: "example.org", userHandle: [7])
        let outcome = try store.importCredentials([existing, sameUser, other, other])
        #expect(outcome.added == [sameUser.id, other.id])
        #expect(outcome.skippedDuplicates == [existing.id, other.id])
        #expect(try store.allCredentials().count == 3)
        let index = try CredentialIdentityIndex.read(forStore: store.url)
        #expect(Set(index.identities.map(\.credentialID)) == [existing.id, sameUser.id, other.id])
        store.close()
        // Reopened, every imported key opens with its row.
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        defer { reopened.close() }
        #expect(
            try reopened.credential(id: other.id)?.privateKey.rawRepresentation == other.privateKey.rawRepresentation)
    }

    @Test func aCredentialTheStoreCannotHoldImportsNothing() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        defer { store.close() }
        var tooLong = makeCredential()
        tooLong.userHandle = randomBytes(65)
        #expect(throws: CredentialStoreError.self) { try store.importCredentials([makeCredential(), tooLong]) }
        #expect(try store.allCredentials().isEmpty)
    }
}
