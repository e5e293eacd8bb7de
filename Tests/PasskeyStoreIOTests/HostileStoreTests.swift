import CTAP2
import Crypto
import Foundation
@testable import PasskeyStoreIO
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 10: a store file changed by someone without the passphrase, left by a killed process, or not writable.
/// Each test failed before its fix; they use only the API that existed then, except that the read-only store's tests
/// now say who answers whether the store may write (`Writability`), so that they run as root too.
struct HostileStoreTests {
    static let passphrase = "correct horse"

    // MARK: Defect 8: a failed open never checkpoints

    @Test func aFailedOpenLeavesCommittedWALDataOfAKilledProcessUntouched() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.save(makeCredential())
        store.close()
        // A writer commits and is killed before any checkpoint: the commit lives only in the WAL.
        let writer = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import os, signal, sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("PRAGMA wal_autocheckpoint = 0")
                db.execute("INSERT OR REPLACE INTO large_blob_array (singleton, serialized) VALUES (1, x'0102')")
                os.kill(os.getpid(), signal.SIGKILL)
                """,
                scratch.url().path,
            ])
        #expect(writer.termination.signaled, "\(writer.termination): \(writer.stderr)")
        let wal = URL(fileURLWithPath: scratch.url().path + "-wal")
        let walSize = try FileManager.default.attributesOfItem(atPath: wal.path)[.size] as? Int
        #expect((walSize ?? 0) > 0, "the killed writer should have left its commit in the WAL")

        let before = try digest(of: scratch.url())
        let walBefore = try digest(of: wal)
        expectStoreError(.wrongPassphrase) {
            try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "not the passphrase")
        }
        #expect(try digest(of: scratch.url()) == before, "the failed open checkpointed the WAL into the store")
        #expect(try digest(of: wal) == walBefore)

        // The commit is not lost: the right passphrase sees it.
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(try reopened.largeBlobArray() == [1, 2])
    }

    // MARK: Defect 9: one damaged row takes only itself offline

    @Test func aFlippedByteInOneSealedKeyLeavesTheOtherPasskeysUsable() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credentials = (0..<3).map { makeCredential(userHandle: [UInt8($0)]) }
        for credential in credentials { try store.save(credential) }
        store.close()
        try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            key = db.execute("SELECT sealed_private_key FROM credentials WHERE credential_id = ?",
                             (bytes.fromhex(sys.argv[2]),)).fetchone()[0]
            db.execute("UPDATE credentials SET sealed_private_key = ? WHERE credential_id = ?",
                       (bytes([key[0] ^ 1]) + key[1:], bytes.fromhex(sys.argv[2])))
            db.commit()
            """,
            scratch.url().path, hex(credentials[1].id))
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(try reopened.credential(id: credentials[1].id) == nil)
        #expect(Set(try reopened.allCredentials().map(\.id)) == [credentials[0].id, credentials[2].id])
        #expect(try reopened.credentials(forRelyingParty: "example.com").count == 2)
        expectSame(try reopened.credential(id: credentials[2].id), credentials[2])
        // Deleting needs only the row.
        #expect(try reopened.deleteCredential(id: credentials[1].id))
    }

    // MARK: Defect 13: security metadata is authenticated

    /// Changes a plain SQL UPDATE can make to one passkey's row; each must make the row unusable.
    static let rowChanges = [
        "cred_protect = 1", "rp_id = 'evil.example'", "discoverable = 0", "backup_eligible = 1, backup_state = 1",
        "hmac_secret = 0", "large_blob_key = 0", "cred_blob = x'00'", "user_handle = x'09'", "user_name = 'mallory'",
        "user_display_name = NULL", "rp_name = 'Evil'", "created_ms = 0", "credential_id = x'00112233'",
        "third_party_payment = 0",
    ]

    /// A column added in schema version 5 is authenticated only when set: setting it in the file on a row written
    /// without it is a change like any other.
    @Test func settingThirdPartyPaymentOnARowWithoutItIsNeverUsed() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        expectSame(try store.credential(id: credential.id), credential)
        try await execute("UPDATE credentials SET third_party_payment = 1", on: scratch.url())
        #expect(try store.allCredentials().isEmpty)
        #expect(try store.credential(id: credential.id) == nil)
    }

    @Test(arguments: rowChanges)
    func aRowChangedWithoutThePassphraseIsNeverUsed(change: String) async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeFullyProtectedCredential()
        try store.save(credential)
        _ = try store.allCredentials()  // warm the key cache: a changed row must not be served from it
        try await execute("UPDATE credentials SET \(change)", on: scratch.url())
        #expect(try store.allCredentials().isEmpty, "\(change) was accepted while the store was open")
        store.close()

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        #expect(try reopened.allCredentials().isEmpty, "\(change) was accepted")
        #expect(try reopened.credential(id: credential.id) == nil)
        #expect(try reopened.credentials(forRelyingParty: "example.com").isEmpty)
    }

    @Test(arguments: [
        "UPDATE authenticator_settings SET pin_retries = 8", "UPDATE authenticator_settings SET always_uv = 0",
        "UPDATE authenticator_settings SET uv_retries = 8", "UPDATE authenticator_settings SET min_pin_length = 4",
        "UPDATE authenticator_settings SET sealed_pin_hash = NULL, pin_code_points = 0",
        "UPDATE authenticator_settings SET sealed_device_secret = NULL",
        "DELETE FROM authenticator_settings",
    ])
    func settingsChangedWithoutThePassphraseAreRefused(change: String) async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let settings = AuthenticatorSettings(
            pinHash: [UInt8](repeating: 3, count: 16), pinCodePointCount: 6, pinRetries: 2, uvRetries: 1,
            minimumPINLength: 6, alwaysUV: true, deviceSecret: [UInt8](repeating: 5, count: 32))
        try store.saveSettings(settings)
        #expect(try store.settings() == settings)
        try await execute(change, on: scratch.url())
        #expect(throws: CredentialStoreError.self, "\(change) was accepted") { try store.settings() }
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        let error = expectStoreError(.corrupt) { try reopened.settings() }
        #expect(error?.message.contains("settings") == true)
        // Saving settings anew (the owner resetting them) repairs the row.
        try reopened.saveSettings(settings)
        #expect(try reopened.settings() == settings)
    }

    // MARK: Scrypt parameters from the file: a floor and a ceiling

    @Test(arguments: [
        "kdf_rounds = 1024", "kdf_rounds = 2, kdf_block_size = 1", "kdf_rounds = 262144, kdf_parallelism = 16",
    ])
    func keyDerivationParametersOutsideTheLimitsAreRefused(change: String) async throws {
        let scratch = try Scratch()
        try scratch.makeStore().close()
        try await execute("UPDATE meta SET \(change)", on: scratch.url())
        let before = try digest(of: scratch.url())
        let error = expectStoreError(.corrupt) {
            try SQLiteCredentialStore.open(at: scratch.url(), passphrase: Self.passphrase)
        }
        #expect(error?.message.contains("refuses") == true)
        #expect(try digest(of: scratch.url()) == before)
    }

    // MARK: Defect 10: a store SQLite could only open read-only

    /// Who answers whether the store may write: the kernel's `access(2)`, and the owner's permission bits alone.
    ///
    /// Root's `access(2)` allows whatever the bits deny, so as root (CI) only the bits can make a store read-only;
    /// they answer as `access(2)` answers an owner who is not root. Otherwise both run, so the kernel's answer
    /// stays tested wherever it can be.
    enum Writability: String, CaseIterable, CustomTestStringConvertible {
        case kernel
        case ownerPermissionBits

        var fileAccess: FileAccess {
            switch self {
            case .kernel: .system
            case .ownerPermissionBits: .ownerPermissionBits
            }
        }

        var testDescription: String { rawValue }

        static let testable: [Writability] = geteuid() == 0 ? [.ownerPermissionBits] : allCases
    }

    @Test(arguments: Writability.testable)
    func aReadOnlyStoreIsRefusedAndLeavesNoReadOnlySideFiles(writability: Writability) async throws {
        let scratch = try Scratch()
        let credential = makeCredential()
        let store = try scratch.makeStore()
        try store.save(credential)
        store.close()
        let path = scratch.url().path
        chmod(path, 0o400)
        let error = expectStoreError(.io) {
            try SQLiteCredentialStore.open(
                at: scratch.url(), passphrase: Self.passphrase, busyTimeout: .seconds(5),
                fileAccess: writability.fileAccess)
        }
        #expect(error?.message.contains("not writable (mode 400)") == true)
        #expect(error?.message.contains(path) == true)
        #expect(access(path + "-wal", F_OK) != 0 && access(path + "-shm", F_OK) != 0, "side files were created")

        // Once the owner restores the mode, the store is writable again.
        chmod(path, 0o600)
        let reopened = try SQLiteCredentialStore.open(
            at: scratch.url(), passphrase: Self.passphrase, busyTimeout: .seconds(5),
            fileAccess: writability.fileAccess)
        try reopened.save(makeCredential(userHandle: [9]))
        #expect(try reopened.allCredentials().count == 2)
    }

    @Test(arguments: Writability.testable)
    func aStoreInAReadOnlyDirectoryIsRefusedNamingTheDirectory(writability: Writability) async throws {
        let scratch = try Scratch()
        let directory = scratch.url("sub").path
        let url = scratch.url("sub/passkeys.sqlite")
        try SQLiteCredentialStore.create(at: url, passphrase: Self.passphrase, kdf: .testing).close()
        chmod(directory, 0o500)
        defer { chmod(directory, 0o700) }
        let error = expectStoreError(.io) {
            try SQLiteCredentialStore.open(
                at: url, passphrase: Self.passphrase, busyTimeout: .seconds(5), fileAccess: writability.fileAccess)
        }
        #expect(error?.message.contains("directory \(directory)") == true)
        #expect(error?.message.contains("(Permission denied)") == true)
    }
}

extension FileAccess {
    /// `access(2)` as it answers a file's owner who is not root: from the owner's permission bits alone (each scratch
    /// file here is this process's own). Search permission on the path's ancestors is not checked: the scratch
    /// directories are 0700 and this process's.
    static let ownerPermissionBits = FileAccess { path, mode in
        var info = stat()
        guard stat(path, &info) == 0 else { return errno }
        // R_OK, W_OK and X_OK are 4, 2 and 1: the owner's r, w and x bits, shifted down.
        let granted = Int32((info.st_mode >> 6) & 0o7)
        return mode & ~granted & 0o7 == 0 ? nil : EACCES
    }
}
