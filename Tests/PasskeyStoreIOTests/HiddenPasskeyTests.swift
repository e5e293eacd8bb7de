import CTAP2
import Foundation
import PasskeyStoreIO
import Testing

/// Schema version 6: passkeys a relying party's signal hid (kept, authenticated, deleted after the grace period), and
/// the record of a saved password given to a page (what an automatic passkey upgrade needs).
struct HiddenPasskeyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aHiddenPasskeyIsKeptWithItsDateAndShownAgainOnRequest() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let kept = makeCredential()
        let hidden = makeCredential(userHandle: [9])
        try store.save(kept)
        try store.save(hidden)

        let changed = try store.setHidden(Self.now, credentialIDs: [hidden.id, [0xAA, 0xBB]])
        #expect(changed.map(\.id) == [hidden.id])
        #expect(try store.credential(id: hidden.id)?.hiddenDate == Self.now)
        #expect(try store.credential(id: kept.id)?.hiddenDate == nil)
        // Hiding again changes nothing; the store still holds both, for allowList requests and `passkey unhide`.
        #expect(try store.setHidden(Self.now.addingTimeInterval(60), credentialIDs: [hidden.id]).isEmpty)
        #expect(try store.credentials(forRelyingParty: "example.com").count == 2)
        let index = try CredentialIdentityIndex.read(forStore: scratch.url())
        #expect(index.identity(credentialID: hidden.id)?.hiddenDate == Self.now)
        #expect(index.identity(credentialID: kept.id)?.isHidden == false)
        store.close()

        // The date survives reopening, and the seal still opens: the column is authenticated when set.
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        defer { reopened.close() }
        #expect(try reopened.credential(id: hidden.id)?.hiddenDate == Self.now)
        #expect(try reopened.setHidden(nil, credentialIDs: [hidden.id]).map(\.id) == [hidden.id])
        #expect(try reopened.credential(id: hidden.id)?.hiddenDate == nil)
        #expect(
            try CredentialIdentityIndex.read(forStore: scratch.url()).identity(credentialID: hidden.id)?.isHidden
                == false)
    }

    /// Whoever can write the file but not the passphrase cannot hide a passkey, nor bring back a hidden one: either
    /// change makes the row fail its check.
    @Test(arguments: ["UPDATE credentials SET hidden_ms = 1", "UPDATE credentials SET hidden_ms = NULL"])
    func hidingOrShowingInTheFileIsNeverUsed(change: String) async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        if change.hasSuffix("NULL") { try store.setHidden(Self.now, credentialIDs: [credential.id]) }
        try await execute(change, on: scratch.url())
        #expect(try store.credential(id: credential.id) == nil)
        #expect(try store.damagedCredentials().map(\.id) == [credential.id])
    }

    @Test func hiddenPasskeysGoOnlyOnceTheirGracePeriodIsOver() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        defer { store.close() }
        let old = makeCredential(userHandle: [1])
        let recent = makeCredential(userHandle: [2])
        let shown = makeCredential(userHandle: [3])
        for credential in [old, recent, shown] { try store.save(credential) }
        let grace = SQLiteCredentialStore.hiddenGracePeriod
        #expect(grace == 30 * 86_400)
        try store.setHidden(Self.now.addingTimeInterval(-grace - 1), credentialIDs: [old.id])
        try store.setHidden(Self.now.addingTimeInterval(-grace + 60), credentialIDs: [recent.id])

        #expect(try store.deleteExpiredHidden(now: Self.now) == [old.id])
        #expect(try store.credential(id: old.id) == nil)
        #expect(try store.credential(id: recent.id) != nil && store.credential(id: shown.id) != nil)
        #expect(try CredentialIdentityIndex.read(forStore: scratch.url()).identity(credentialID: old.id) == nil)
        #expect(try store.deleteExpiredHidden(now: Self.now).isEmpty)
    }

    @Test func aPasswordFillIsRecordedAndAuthenticated() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let service = try #require(PasswordService("example.com"))
        try store.savePassword("hunter2 hunter2", userName: "alice", service: service)
        let login = try #require(try store.passwords().first).login
        #expect(login.filledDate == nil)

        let used = try #require(try store.recordPasswordUse(login, filledAt: Self.now))
        #expect(used.filledDate == Self.now)
        #expect(try store.passwords().first?.login.filledDate == Self.now)
        // A use without a fill (a copy to the clipboard) keeps the last fill.
        #expect(try store.recordPasswordUse(used)?.filledDate == Self.now)
        // Only rows filled since a time are read for an upgrade; a login never filled is not among them.
        try store.savePassword("another one", userName: "bob", service: service)
        let recent = try store.passwordEntries(filledSince: Self.now.addingTimeInterval(-60))
        #expect(recent.map(\.service) == ["example.com"])
        #expect(try store.passwordEntries(filledSince: Self.now).count == 1)
        #expect(try store.passwordEntries(filledSince: Self.now.addingTimeInterval(1)).isEmpty)

        // Moving the fill in the file, to allow an upgrade the person never started, breaks the row's seal.
        try await execute("UPDATE passwords SET filled_ms = filled_ms + 1000", on: scratch.url())
        #expect(try store.passwords().map(\.login.userName) == ["bob"])
        let moved = try store.passwordEntries(filledSince: Self.now)
        #expect(moved.count == 1)
        if case .intact = try #require(moved.first) { Issue.record("a moved fill time opened") }
        store.close()
    }
}
