import CTAP2
import Crypto
import Foundation
@testable import PasskeyStoreIO
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The serving lock, damaged rows as entries, and what keeps a row's seal valid through legitimate changes.
struct LockAndEntryTests {
    @Test func aSecondServingProcessIsRefusedNamingTheFirst() throws {
        let scratch = try Scratch()
        let url = scratch.url("dir/passkeys.sqlite")
        var first: StoreLock? = try StoreLock.acquire(forStore: url)
        #expect(permissions(of: URL(fileURLWithPath: first?.path ?? "")) == 0o600)
        // flock belongs to the open file description, so a second acquire in this process contends like another
        // process would.
        let error = expectStoreError(.busy) { try StoreLock.acquire(forStore: url) }
        #expect(error?.message.contains("in use by another passkey process (pid \(getpid()))") == true)
        first = nil
        let second = try StoreLock.acquire(forStore: url)
        #expect(second.path == url.path + ".lock")
    }

    /// Issue 23, attack 4: a symbolic link to the store (or to its directory) named a lock of its own, so a second
    /// `serve` ran on the same store through the link.
    @Test func aStoreReachedThroughASymbolicLinkTakesTheSameLock() throws {
        let scratch = try Scratch()
        let url = scratch.url("real/passkeys.sqlite")
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: url.path, contents: Data()))
        let fileLink = scratch.url("elsewhere/link.sqlite")
        try FileManager.default.createDirectory(
            at: fileLink.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: fileLink, withDestinationURL: url)
        let directoryLink = scratch.url("linked-directory")
        try FileManager.default.createSymbolicLink(
            at: directoryLink, withDestinationURL: url.deletingLastPathComponent())

        let first = try StoreLock.acquire(forStore: url)
        for other in [fileLink, directoryLink.appendingPathComponent("passkeys.sqlite")] {
            let error = expectStoreError(.busy) { try StoreLock.acquire(forStore: other) }
            #expect(error?.message.contains("in use by another passkey process") == true, "\(other.path)")
        }
        #expect(first.path == StoreLock.resolved(url).path + ".lock")
        #expect(!FileManager.default.fileExists(atPath: fileLink.path + ".lock"))

        // A store that does not exist yet, in a directory reached through a link, locks its resolved name too.
        let fresh = try StoreLock.acquire(forStore: directoryLink.appendingPathComponent("new.sqlite"))
        let error = expectStoreError(.busy) {
            try StoreLock.acquire(forStore: url.deletingLastPathComponent().appendingPathComponent("new.sqlite"))
        }
        #expect(error != nil)
        _ = fresh
    }

    @Test func entriesListDamagedRowsAndDeleteWorksFromTheRow() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let good = makeCredential(userHandle: [1])
        let bad = makeCredential(userHandle: [2], userName: "bob")
        try store.save(good)
        try store.save(bad)
        try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("UPDATE credentials SET cred_protect = 1, discoverable = 0 WHERE user_name = 'bob'")
            db.commit()
            """,
            scratch.url().path)
        let reported = Mutex<[DamagedCredential]>([])
        store.onDamagedCredential { damaged in reported.withLock { $0.append(damaged) } }
        #expect(try store.allCredentials().map(\.id) == [good.id])
        #expect(try store.allCredentials().map(\.id) == [good.id])
        #expect(reported.withLock { $0.map(\.id) } == [bad.id], "each damaged row is reported once")

        let entries = try store.entries()
        #expect(entries.count == 2)
        guard case .damaged(let damaged)? = try store.entry(id: bad.id) else {
            Issue.record("the tampered row is not reported as damaged")
            return
        }
        #expect(damaged.reason == .failsIntegrityCheck)
        #expect(damaged.relyingPartyID == "example.com" && damaged.userName == "bob")
        guard case .intact? = try store.entry(id: good.id) else {
            Issue.record("the untouched row is not intact")
            return
        }
        expectStoreError(.corrupt) { try store.updateUser(credentialID: bad.id, userName: "x", userDisplayName: nil) }
        #expect(try store.deleteCredential(id: bad.id))
        #expect(try store.damagedCredentials().isEmpty)
    }

    @Test func renamingAPasskeyKeepsItUsableAcrossReopening() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        var credential = makeCredential()
        try store.save(credential)
        #expect(try store.updateUser(credentialID: credential.id, userName: "alice2", userDisplayName: nil))
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        credential.userName = "alice2"
        credential.userDisplayName = nil
        expectSame(try reopened.credential(id: credential.id), credential)
        #expect(try reopened.damagedCredentials().isEmpty)
    }

    @Test func resetKeepsAnAuthenticatedSettingsRow() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.saveSettings(AuthenticatorSettings(pinHash: [UInt8](repeating: 1, count: 16), pinCodePointCount: 4))
        try store.deleteAll()
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.settings() == AuthenticatorSettings())
    }
}
