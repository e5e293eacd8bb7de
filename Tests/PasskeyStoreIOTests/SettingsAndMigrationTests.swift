import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing
import WebAuthn

/// Schema version 2: the authenticator settings (PIN state) and the in-place upgrade of version 1 stores.
struct SettingsAndMigrationTests {
    static let fixturePassphrase = "fixture passphrase"

    /// A copy of the version 1 store made by `passkey serve` before the CTAP 2.1 work
    /// (Tools/vectors/make_v1_store_fixture.py): alice at example.com (discoverable), bob at example.org.
    static func versionOneStore(in scratch: Scratch) throws -> URL {
        let fixture = try #require(
            Bundle.module.url(forResource: "schema-v1", withExtension: "sqlite", subdirectory: "Fixtures"))
        let url = scratch.url()
        try FileManager.default.copyItem(at: fixture, to: url)
        return url
    }

    static func userVersion(_ url: URL) async throws -> String {
        try await python(
            "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])",
            url.path
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func settingsRoundTripAndThePINHashIsSealed() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        #expect(try store.settings() == AuthenticatorSettings())
        let hash = Array(SHA256.hash(data: Array("1234".utf8)).prefix(16))
        let settings = AuthenticatorSettings(
            pinHash: hash, pinCodePointCount: 4, pinRetries: 5, uvRetries: 6, minimumPINLength: 6,
            minimumPINLengthRelyingParties: ["example.com", "zoë.example"], alwaysUV: true, forcePINChange: true)
        try store.saveSettings(settings)
        #expect(try store.settings() == settings)
        store.close()

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.settings() == settings)
        reopened.close()
        let file = try Data(contentsOf: scratch.url())
        #expect(file.range(of: Data(hash)) == nil)
    }

    @Test func outOfRangeSettingsAreRefusedAndNothingChanges() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let good = AuthenticatorSettings(pinRetries: 3)
        try store.saveSettings(good)
        for bad in [
            AuthenticatorSettings(pinRetries: 9), AuthenticatorSettings(pinRetries: -1),
            AuthenticatorSettings(uvRetries: 9), AuthenticatorSettings(minimumPINLength: 3),
            AuthenticatorSettings(minimumPINLength: 64), AuthenticatorSettings(pinHash: [1, 2, 3]),
        ] {
            #expect(throws: CredentialStoreError.self) { try store.saveSettings(bad) }
        }
        #expect(try store.settings() == good)
    }

    @Test func resetDeletesPasskeysAndSettingsTogether() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.save(makeCredential())
        try store.saveSettings(AuthenticatorSettings(pinHash: [UInt8](repeating: 1, count: 16), pinCodePointCount: 4))
        try store.deleteAll()
        #expect(try store.allCredentials().isEmpty)
        #expect(try store.settings() == AuthenticatorSettings())
    }

    @Test func aTamperedPINHashIsCorrupt() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.saveSettings(AuthenticatorSettings(pinHash: [UInt8](repeating: 1, count: 16), pinCodePointCount: 4))
        store.close()
        _ = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            sealed = bytearray(db.execute('SELECT sealed_pin_hash FROM authenticator_settings').fetchone()[0])
            sealed[20] ^= 1
            db.execute('UPDATE authenticator_settings SET sealed_pin_hash = ?', (bytes(sealed),))
            db.commit()
            """,
            scratch.url().path
        )
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(throws: CredentialStoreError.self) { try reopened.settings() }
        #expect((try? reopened.settings()) == nil)
        do {
            _ = try reopened.settings()
        } catch {
            #expect(error.code == .corrupt)
        }
    }

    @Test func aVersionOneStoreIsMigratedInPlaceKeepingEveryPasskey() async throws {
        let scratch = try Scratch()
        let url = try Self.versionOneStore(in: scratch)
        #expect(try await Self.userVersion(url) == "1")
        let store = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try await Self.userVersion(url) == "\(SQLiteCredentialStore.schemaVersion)")
        let all = try store.allCredentials()
        #expect(all.map(\.relyingPartyID) == ["example.com", "example.org"])
        #expect(all.map(\.userName) == ["alice", "bob"])
        #expect(all.map(\.isDiscoverable) == [true, false])
        #expect(try store.settings() == AuthenticatorSettings())
        // The migrated store takes new settings and passkeys, and opens again without migrating.
        try store.saveSettings(AuthenticatorSettings(alwaysUV: true))
        try store.save(makeCredential())
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try reopened.settings().alwaysUV)
        #expect(try reopened.allCredentials().count == 3)
        // Keys unsealed from the version 1 file still sign.
        let message = Array("migrated".utf8)
        let key = try #require(all.first).privateKey
        #expect(key.algorithm == .es256)
        #expect(key.publicKey.isValidSignature(try key.signature(message, []), for: message))
    }

    @Test func aWrongPassphraseLeavesAVersionOneStoreUntouched() async throws {
        let scratch = try Scratch()
        let url = try Self.versionOneStore(in: scratch)
        let before = try Data(contentsOf: url)
        #expect(throws: CredentialStoreError.self) {
            try SQLiteCredentialStore.open(at: url, passphrase: "not the passphrase")
        }
        #expect(try Data(contentsOf: url) == before)
        #expect(try await Self.userVersion(url) == "1")
    }

    @Test func aFailedMigrationRollsBackAndTheStoreStaysVersionOne() async throws {
        let scratch = try Scratch()
        let url = try Self.versionOneStore(in: scratch)
        // A table in the way makes the upgrade's CREATE TABLE fail part-way through the transaction.
        _ = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('CREATE TABLE authenticator_settings (x)')
            db.commit()
            """,
            url.path
        )
        #expect(throws: CredentialStoreError.self) {
            try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        }
        #expect(try await Self.userVersion(url) == "1")
        _ = try await python(
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('DROP TABLE authenticator_settings'); db.commit()",
            url.path
        )
        let store = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try store.allCredentials().count == 2)
    }

    /// A version 2 store made by the previous release (before rows were authenticated): alice at example.com
    /// (discoverable, credProtect 3, hmac-secret, credBlob 010203), bob at example.org (server-side); a PIN ("1234"),
    /// 5 PIN retries and alwaysUv on. scrypt N=2^14, r=8, p=1.
    static func versionTwoStore(in scratch: Scratch) throws -> URL {
        let fixture = try #require(
            Bundle.module.url(forResource: "schema-v2", withExtension: "sqlite", subdirectory: "Fixtures"))
        let url = scratch.url()
        try FileManager.default.copyItem(at: fixture, to: url)
        return url
    }

    @Test func aVersionTwoStoreIsMigratedToAuthenticatedRowsKeepingEverything() async throws {
        let scratch = try Scratch()
        let url = try Self.versionTwoStore(in: scratch)
        #expect(try await Self.userVersion(url) == "2")
        let store = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try await Self.userVersion(url) == "\(SQLiteCredentialStore.schemaVersion)")
        let all = try store.allCredentials()
        #expect(all.map(\.userName) == ["alice", "bob"])
        #expect(all.map(\.credentialProtection) == [.userVerificationRequired, .userVerificationOptional])
        #expect(all.map(\.hmacSecret) == [true, false])
        #expect(all.first?.credentialBlob == [1, 2, 3])
        let alicePublicKey =
            "5f78884e3d4b49bae5ac80679c002f9e11ba10122eb482e12efb950568cb012ec70b06f5fdf45dacbc6cde703a1d76ff9b0991307d15f88366c67e9b5c07353f"
        let alice = try #require(all.first?.privateKey.p256)
        #expect(hex(alice.publicKey.rawRepresentation) == alicePublicKey)
        let settings = try store.settings()
        #expect(settings.pinHash == Array(SHA256.hash(data: Array("1234".utf8)).prefix(16)))
        #expect(settings.pinRetries == 5 && settings.alwaysUV)
        store.close()

        // After the migration, the rows are authenticated: lowering credProtect takes alice offline.
        _ = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("UPDATE credentials SET cred_protect = 1 WHERE user_name = 'alice'")
            db.execute("UPDATE authenticator_settings SET always_uv = 0")
            db.commit()
            """,
            url.path
        )
        let reopened = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try reopened.allCredentials().map(\.userName) == ["bob"])
        #expect(throws: CredentialStoreError.self) { try reopened.settings() }
    }

    @Test func aVersionTwoRowDamagedBeforeTheMigrationStaysDamaged() async throws {
        let scratch = try Scratch()
        let url = try Self.versionTwoStore(in: scratch)
        _ = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            key = db.execute("SELECT sealed_private_key FROM credentials WHERE user_name = 'bob'").fetchone()[0]
            db.execute("UPDATE credentials SET sealed_private_key = ? WHERE user_name = 'bob'",
                       (bytes([key[0] ^ 1]) + key[1:],))
            db.commit()
            """,
            url.path
        )
        let store = try SQLiteCredentialStore.open(at: url, passphrase: Self.fixturePassphrase)
        #expect(try store.allCredentials().map(\.userName) == ["alice"])
        #expect(try store.damagedCredentials().map(\.userName) == ["bob"])
    }

    @Test func aWrongPassphraseLeavesAVersionTwoStoreUntouched() async throws {
        let scratch = try Scratch()
        let url = try Self.versionTwoStore(in: scratch)
        let before = try Data(contentsOf: url)
        #expect(throws: CredentialStoreError.self) {
            try SQLiteCredentialStore.open(at: url, passphrase: "not the passphrase")
        }
        #expect(try Data(contentsOf: url) == before)
    }
}
