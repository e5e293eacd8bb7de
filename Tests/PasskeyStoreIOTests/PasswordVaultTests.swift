import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

/// Saved passwords in the store: sealed like private keys, authenticated with their row, listed by the identity
/// index beside the passkeys, and added to an older store by the version 3 → 4 migration.
struct PasswordVaultTests {
    static let secret = "correct-Horse-battery-9"

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func service(_ text: String) throws -> PasswordService { try #require(PasswordService(text)) }

    @Test(arguments: [
        ("example.com", PasswordService.Kind.domain, "example.com"),
        ("Example.COM", .domain, "example.com"),
        ("https://Example.com/", .origin, "https://example.com"),
        ("https://example.com:443", .origin, "https://example.com"),
        ("https://example.com:8443", .origin, "https://example.com:8443"),
        ("ABCDE12345.com.example.app", .app, "ABCDE12345.com.example.app"),
    ])
    func serviceIdentifiersAreNormalized(raw: String, kind: PasswordService.Kind, stored: String) throws {
        let service = try Self.service(raw)
        #expect(service.kind == kind && service.text == stored)
    }

    @Test(arguments: [
        "", "http://example.com", "https://example.com/login", "https://user@example.com", "exa mple.com",
        "-bad.example", "example..com", "https://example.com?x=1", "ftp://example.com",
        String(repeating: "a", count: 2000),
    ])
    func badServiceIdentifiersAreRefused(raw: String) {
        #expect(PasswordService(raw) == nil)
    }

    @Test func saveGetChangeAndDeleteAndTheFileNeverHoldsThePassword() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let example = try Self.service("example.com")
        #expect(try store.savePassword(Self.secret, userName: "alice", service: example) == .added)
        #expect(try store.savePassword(Self.secret, userName: "alice", service: example) == .unchanged)
        let saved = try #require(try store.passwords(service: example).first)
        #expect(saved.password == Self.secret && saved.login.userName == "alice" && saved.login.rank == 1)
        #expect(!"\(saved)".contains(Self.secret))
        var dumped = ""
        dump(saved, to: &dumped)
        #expect(!dumped.contains(Self.secret))

        let later = saved.login.creationDate.addingTimeInterval(60)
        #expect(try store.savePassword("another-One-2", userName: "alice", service: example, at: later) == .changed)
        let changed = try #require(try store.passwords(service: example).first)
        #expect(changed.password == "another-One-2")
        #expect(changed.login.creationDate == saved.login.creationDate && changed.login.modificationDate == later)
        store.close()

        // Neither password is in the database, its WAL or the index, in any form a grep finds.
        for name in ["passkeys.sqlite", "passkeys.sqlite-wal", "passkeys.index.json", "passkeys.index.journal"] {
            guard let bytes = FileManager.default.contents(atPath: scratch.url(name).path) else { continue }
            for secret in [Self.secret, "another-One-2"] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(name) holds a password")
            }
        }

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.deletePassword(service: example, userName: "alice"))
        #expect(try !reopened.deletePassword(service: example, userName: "alice"))
        #expect(try reopened.passwords().isEmpty)
    }

    @Test func passwordsAreRefusedWhenEmptyOrTooLong() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let example = try Self.service("example.com")
        _ = expectStoreError(.io) { try store.savePassword("", userName: "alice", service: example) }
        _ = expectStoreError(.io) {
            try store.savePassword(String(repeating: "x", count: 4097), userName: "alice", service: example)
        }
        #expect(try store.passwords().isEmpty)
    }

    @Test func useRanksALoginAboveTheOthersOfItsService() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let example = try Self.service("example.com")
        try store.savePassword("a-Password-1", userName: "alice", service: example)
        try store.savePassword("b-Password-2", userName: "bob", service: example)
        #expect(try store.passwords(service: example).map(\.login.userName) == ["bob", "alice"])
        let alice = try #require(try store.passwords(service: example).last)
        let used = try #require(try store.recordPasswordUse(alice.login))
        #expect(used.rank == 3)
        #expect(try store.passwords(service: example).map(\.login.userName) == ["alice", "bob"])
        // The rank is sealed with the row: the password still opens.
        #expect(try store.passwords(service: example).first?.password == "a-Password-1")
        let index = try CredentialIdentityIndex.read(forStore: scratch.url())
        #expect(index.passwords.map(\.userName) == ["alice", "bob"])
        #expect(index.passwords.map(\.rank) == [3, 2])
    }

    @Test func theIndexListsPasswordsBesidePasskeysByKind() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let passkey = makeCredential(relyingParty: "example.com", userName: "alice")
        try store.save(passkey)
        try store.savePassword("site-Password-1", userName: "alice", service: Self.service("example.com"))
        try store.savePassword("port-Password-2", userName: "carol", service: Self.service("https://example.com:8443"))
        try store.savePassword("app-Password-3", userName: "dave", service: Self.service("ABCDE12345.com.example.app"))
        try store.savePassword("other-Password-4", userName: "erin", service: Self.service("other.example"))

        for index in [
            try CredentialIdentityIndex.read(forStore: scratch.url()),
            try { () throws -> CredentialIdentityIndex in
                // Rebuilt from the rows on unlock, the same.
                store.close()
                try FileManager.default.removeItem(at: scratch.url("passkeys.index.json"))
                try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse").close()
                return try CredentialIdentityIndex.read(forStore: scratch.url())
            }(),
        ] {
            #expect(index.passkeys.map(\.credentialID) == [passkey.id])
            #expect(Set(index.passwords.compactMap(\.userName)) == ["alice", "carol", "dave", "erin"])
            #expect(index.identities(forRelyingParty: "example.com").map(\.kind) == [.passkey])
            #expect(Set(index.passwords(forRelyingParty: "example.com").compactMap(\.userName)) == ["alice", "carol"])
            #expect(index.passwords.allSatisfy { $0.kind == .password })
        }
        let text = try String(contentsOf: scratch.url("passkeys.index.json"), encoding: .utf8)
        #expect(text.contains("\"kind\" : \"password\"") && text.contains("\"kind\" : \"passkey\""))
        for secret in ["site-Password-1", "port-Password-2", "app-Password-3", "other-Password-4"] {
            #expect(!text.contains(secret))
        }
    }

    @Test func deletingAPasswordAndResettingTheAuthenticatorKeepTheOtherKindInTheIndex() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let passkey = makeCredential(relyingParty: "example.com", userName: "alice")
        try store.save(passkey)
        let example = try Self.service("example.com")
        try store.savePassword("site-Password-1", userName: "alice", service: example)
        try store.savePassword("site-Password-2", userName: "bob", service: example)
        #expect(try store.deletePassword(service: example, userName: "bob"))
        var index = try CredentialIdentityIndex.read(forStore: scratch.url())
        #expect(index.passkeys.count == 1 && index.passwords.compactMap(\.userName) == ["alice"])
        // authenticatorReset removes the passkeys; the saved passwords are not the authenticator's.
        try store.deleteAll()
        index = try CredentialIdentityIndex.read(forStore: scratch.url())
        #expect(index.passkeys.isEmpty && index.passwords.compactMap(\.userName) == ["alice"])
        #expect(try store.passwords().map(\.password) == ["site-Password-1"])
    }

    @Test func anIndexWithoutKindsReadsAsPasskeysAndAnUnknownKindIsDamage() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.save(makeCredential(relyingParty: "example.com", userName: "alice"))
        store.close()
        let url = scratch.url("passkeys.index.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        let withoutKind = text.replacingOccurrences(of: "\"kind\" : \"passkey\",", with: "")
        #expect(withoutKind != text)
        try withoutKind.write(to: url, atomically: true, encoding: .utf8)
        #expect(try CredentialIdentityIndex.read(forStore: scratch.url()).passkeys.count == 1)
        try text.replacingOccurrences(of: "\"kind\" : \"passkey\"", with: "\"kind\" : \"secret\"")
            .write(to: url, atomically: true, encoding: .utf8)
        #expect(throws: CredentialIdentityIndexError.self) { try CredentialIdentityIndex.read(forStore: scratch.url()) }
    }

    // MARK: Hostile rows

    /// A store with two logins, alice's and bob's, closed; returns its URL.
    static func twoLogins(_ scratch: Scratch) throws -> URL {
        let store = try scratch.makeStore()
        try store.savePassword("alice-Password-1", userName: "alice", service: service("example.com"))
        try store.savePassword("bob-Password-2", userName: "bob", service: service("other.example"))
        store.close()
        return scratch.url()
    }

    @Test(arguments: [
        // The sealed password changed: one bit.
        """
        k = db.execute("SELECT sealed_password FROM passwords WHERE user_name = 'alice'").fetchone()[0]
        db.execute("UPDATE passwords SET sealed_password = ? WHERE user_name = 'alice'", (bytes([k[0] ^ 1]) + k[1:],))
        """,
        // The two rows' sealed passwords swapped.
        """
        a = db.execute("SELECT sealed_password FROM passwords WHERE user_name = 'alice'").fetchone()[0]
        b = db.execute("SELECT sealed_password FROM passwords WHERE user_name = 'bob'").fetchone()[0]
        db.execute("UPDATE passwords SET sealed_password = ? WHERE user_name = 'alice'", (b,))
        db.execute("UPDATE passwords SET sealed_password = ? WHERE user_name = 'bob'", (a,))
        """,
        // The services swapped, so each password would be given to the other site.
        """
        db.execute("UPDATE passwords SET service = 'swap' WHERE user_name = 'alice'")
        db.execute("UPDATE passwords SET service = 'example.com' WHERE user_name = 'bob'")
        db.execute("UPDATE passwords SET service = 'other.example' WHERE user_name = 'alice'")
        """,
        // The user names changed, the rank raised.
        """
        db.execute("UPDATE passwords SET user_name = 'mallory' WHERE user_name = 'alice'")
        db.execute("UPDATE passwords SET rank = 99 WHERE user_name = 'bob'")
        """,
    ])
    func tamperedRowsAreRefusedAsDamaged(script: String) async throws {
        let scratch = try Scratch()
        let url = try Self.twoLogins(scratch)
        try await python(
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n" + script + "\ndb.commit()\n", url.path)
        let store = try SQLiteCredentialStore.open(at: url, passphrase: "correct horse")
        let entries = try store.passwordEntries()
        #expect(entries.count == 2)
        let damaged = entries.filter { if case .damaged = $0 { true } else { false } }
        #expect(!damaged.isEmpty)
        for entry in entries {
            guard case .intact(let credential) = entry else { continue }
            // A row that still opens is exactly what was saved.
            let expected = ["alice": ("example.com", "alice-Password-1"), "bob": ("other.example", "bob-Password-2")]
            let (site, password) = try #require(expected[credential.login.userName])
            #expect(credential.login.service.text == site && credential.password == password)
        }
        // Damaged rows are never offered, and the index leaves them out.
        let usable = try store.passwords()
        #expect(usable.count == 2 - damaged.count)
        #expect(try CredentialIdentityIndex.read(forStore: url).passwords.count == usable.count)
        // Saving over a damaged login is refused; deleting it works from the row alone.
        if case .damaged(let row) = damaged.first, let serviceText = row.service, let user = row.userName,
            let service = PasswordService(serviceText)
        {
            _ = expectStoreError(.corrupt) { try store.savePassword("x-Password-9", userName: user, service: service) }
            #expect(try store.deletePassword(service: service, userName: user))
        }
    }

    // MARK: Migration

    /// A version 3 store made by the previous release: passkeys for alice and bob at example.com (discoverable),
    /// made with `passkey client create`; scrypt N=2^15, r=8, p=1; the fixture passphrase.
    static func versionThreeStore(in scratch: Scratch) throws -> URL {
        let fixture = try #require(
            Bundle.module.url(forResource: "schema-v3", withExtension: "sqlite", subdirectory: "Fixtures"))
        let url = scratch.url()
        try FileManager.default.copyItem(at: fixture, to: url)
        return url
    }

    @Test func aVersionThreeStoreGainsPasswordsKeepingEveryPasskey() async throws {
        let scratch = try Scratch()
        let url = try Self.versionThreeStore(in: scratch)
        #expect(try await SettingsAndMigrationTests.userVersion(url) == "3")
        let store = try SQLiteCredentialStore.open(at: url, passphrase: SettingsAndMigrationTests.fixturePassphrase)
        #expect(try await SettingsAndMigrationTests.userVersion(url) == String(SQLiteCredentialStore.schemaVersion))
        let passkeys = try store.allCredentials()
        #expect(passkeys.map(\.userName) == ["bob", "alice"])
        #expect(
            passkeys.map { Self.base64URL($0.id) } == [
                "lm3jEJGA7aBCC5m1fi6ALTMyXQE7vX4-QW4ZQ9lAvyI", "6lMHj5Tj24sBkDC5-f7TXJknk_pgh2KlNf1I5HgmAOM",
            ])
        #expect(try store.damagedCredentials().isEmpty)
        try store.savePassword("after-Migration-1", userName: "alice", service: Self.service("example.com"))
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: url, passphrase: SettingsAndMigrationTests.fixturePassphrase)
        #expect(try reopened.allCredentials().count == 2)
        #expect(try reopened.passwords().map(\.password) == ["after-Migration-1"])
        let index = try CredentialIdentityIndex.read(forStore: url)
        #expect(index.passkeys.count == 2 && index.passwords.count == 1)
    }

    @Test func aWrongPassphraseLeavesAVersionThreeStoreUntouched() throws {
        let scratch = try Scratch()
        let url = try Self.versionThreeStore(in: scratch)
        let before = try Data(contentsOf: url)
        #expect(throws: CredentialStoreError.self) {
            try SQLiteCredentialStore.open(at: url, passphrase: "not the passphrase")
        }
        #expect(try Data(contentsOf: url) == before)
    }
}
