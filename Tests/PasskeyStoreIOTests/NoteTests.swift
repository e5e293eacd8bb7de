import CSQLite
import CTAP2
import Foundation
import Testing

@testable import PasskeyStoreIO

/// Notes (schema version 5): sealed per passkey and per password, never in the file in clear text, bound to their
/// row, gone with it.
struct NoteTests {
    static let secretNote = "recovery codes: 1234-5678 in the red folder"

    @Test func setReadListClearAndTheFileNeverHoldsTheNote() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let alice = makeCredential(userHandle: [1])
        let bob = makeCredential(userHandle: [2], userName: "bob")
        try store.save(alice)
        try store.save(bob)
        #expect(try store.note(of: .passkey(credentialID: alice.id)) == nil)
        #expect(try store.setNote(Self.secretNote, of: .passkey(credentialID: alice.id)))
        #expect(try store.setNote("line one\nline two", of: .passkey(credentialID: bob.id)))
        #expect(try store.note(of: .passkey(credentialID: alice.id)) == .text(Self.secretNote))
        #expect(
            try store.notes() == [alice.id: .text(Self.secretNote), bob.id: .text("line one\nline two")])
        // No such passkey: nothing is written.
        #expect(try !store.setNote("x", of: .passkey(credentialID: [9, 9, 9])))
        #expect(try store.note(of: .passkey(credentialID: [9, 9, 9])) == nil)
        // Too long: refused before anything is written.
        _ = expectStoreError(.io) {
            try store.setNote(String(repeating: "n", count: 10_001), of: .passkey(credentialID: alice.id))
        }
        #expect(try store.note(of: .passkey(credentialID: alice.id)) == .text(Self.secretNote))
        // The passkey is as it was: a note is not part of what its key's seal covers.
        expectSame(try store.credential(id: alice.id), alice)
        store.close()

        for name in ["passkeys.sqlite", "passkeys.sqlite-wal", "passkeys.index.json", "passkeys.index.journal"] {
            guard let bytes = FileManager.default.contents(atPath: scratch.url(name).path) else { continue }
            #expect(bytes.range(of: Data("recovery codes".utf8)) == nil, "\(name) holds a note")
        }

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.note(of: .passkey(credentialID: alice.id)) == .text(Self.secretNote))
        #expect(try reopened.setNote(nil, of: .passkey(credentialID: alice.id)))
        #expect(try reopened.notes() == [bob.id: .text("line one\nline two")])
        #expect(try reopened.deleteCredential(id: bob.id))
        #expect(try reopened.notes().isEmpty)
    }

    @Test func aNoteMovedToAnotherRowDoesNotOpen() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let alice = makeCredential(userHandle: [1])
        let bob = makeCredential(userHandle: [2], userName: "bob")
        try store.save(alice)
        try store.save(bob)
        #expect(try store.setNote(Self.secretNote, of: .passkey(credentialID: alice.id)))
        try await execute(
            "UPDATE credentials SET sealed_note = (SELECT sealed_note FROM credentials WHERE credential_id = "
                + "x'\(hex(alice.id))') WHERE credential_id = x'\(hex(bob.id))'", on: scratch.url())
        #expect(try store.note(of: .passkey(credentialID: bob.id)) == .damaged)
        #expect(try store.note(of: .passkey(credentialID: alice.id)) == .text(Self.secretNote))
        // The passkeys themselves are untouched and usable.
        expectSame(try store.credential(id: bob.id), bob)
    }

    @Test func passwordNotesAndImportedNotes() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let example = try #require(PasswordService("example.com"))
        try store.savePassword("a-Password-1", userName: "alice", service: example)
        let login = try #require(try store.passwords(service: example).first).login
        #expect(try store.setNote("security answer: blue", of: .password(id: login.id)))
        #expect(try store.notes(ofPasswords: true) == [login.id: .text("security answer: blue")])
        // A password's note and a passkey's note of the same ID bytes are different things.
        #expect(try store.note(of: .passkey(credentialID: login.id)) == nil)

        let imported = makeCredential(userHandle: [7])
        let duplicate = makeCredential(userHandle: [8], userName: "dup")
        try store.save(duplicate)
        #expect(try store.setNote("kept", of: .passkey(credentialID: duplicate.id)))
        let outcome = try store.importCredentials(
            [imported, duplicate], notes: [imported.id: "from the export", duplicate.id: "not over the old one"])
        #expect(outcome.added == [imported.id] && outcome.skippedDuplicates == [duplicate.id])
        #expect(try store.note(of: .passkey(credentialID: imported.id)) == .text("from the export"))
        #expect(try store.note(of: .passkey(credentialID: duplicate.id)) == .text("kept"))
        #expect(try store.deletePassword(service: example, userName: "alice"))
        #expect(try store.notes(ofPasswords: true).isEmpty)
    }
}

/// Schema version 5's rule for columns added after version 3: authenticated only when set, each after its position.
struct LaterColumnAuthenticationTests {
    @Test func aLaterColumnCountsOnlyWhenSetAndNeverStandsInForAnother() {
        let base: [SQLiteValue] = [.blob([1]), .text("example.com")]
        let unset = RowAuthentication.encode([7], base + [.integer(0), .null], alwaysAuthenticated: 2)
        #expect(unset == RowAuthentication.encode([7], base, alwaysAuthenticated: 2))
        let first = RowAuthentication.encode([7], base + [.integer(1), .null], alwaysAuthenticated: 2)
        let second = RowAuthentication.encode([7], base + [.null, .integer(1)], alwaysAuthenticated: 2)
        #expect(first != unset && second != unset && first != second)
    }

    /// The associated data read straight from SQLite's buffers (the getAssertion path's cache check) is the one the
    /// key was sealed with, for a row with thirdPartyPayment set.
    @Test func theRowPathAgreesWithTheValuesPath() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeFullyProtectedCredential()
        try store.save(credential)
        store.close()
        let connection = try SQLiteConnection(path: scratch.url().path, flags: SQLITE_OPEN_READONLY)
        defer { connection.close() }
        let fromRows = try connection.prepared(SQL.selectAll).query([]) { RowAuthentication.credentialAAD(row: $0) }
        #expect(fromRows == [RowAuthentication.credentialAAD(SQLiteCredentialStore.values(of: credential))])
    }
}
