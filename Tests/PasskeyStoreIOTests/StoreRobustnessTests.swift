import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Bad files, wrong passphrases, tampering and crashes: each fails with a typed error and leaves the file as it was.
struct StoreRobustnessTests {
    /// Makes a closed store holding `count` credentials and returns them.
    private func populatedStore(_ scratch: Scratch, count: Int = 3) async throws -> [StoredCredential] {
        let store = try scratch.makeStore()
        var credentials: [StoredCredential] = []
        for index in 0..<count {
            let credential = makeCredential(userHandle: [UInt8(index)])
            try store.save(credential)
            credentials.append(credential)
        }
        store.close()
        return credentials
    }

    /// Opens the store at `url` expecting `code`, and checks the file's bytes did not change.
    @discardableResult
    private func expectOpenFails(
        _ url: URL,
        _ code: CredentialStoreError.Code,
        passphrase: String = "correct horse",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> CredentialStoreError? {
        let before = try digest(of: url)
        let error = expectStoreError(code, sourceLocation: sourceLocation) {
            try SQLiteCredentialStore.open(at: url, passphrase: passphrase)
        }
        #expect(try digest(of: url) == before, "the failed open changed the file", sourceLocation: sourceLocation)
        return error
    }

    @Test func wrongPassphraseIsDetectedAtOpenAndWritesNothing() async throws {
        let scratch = try Scratch()
        let credentials = try await populatedStore(scratch)
        let error = try expectOpenFails(scratch.url(), .wrongPassphrase, passphrase: "Correct horse")
        #expect(error?.message.contains("Correct horse") == false)
        try expectOpenFails(scratch.url(), .wrongPassphrase, passphrase: "")

        let store = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(store.verifyPassphrase("correct horse"))
        #expect(!store.verifyPassphrase("correct horse "))
        #expect(!store.verifyPassphrase(""))
        #expect(try store.allCredentials().count == credentials.count)
    }

    @Test func passphrasesAreComparedAfterUnicodeNormalization() throws {
        let scratch = try Scratch()
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let store = try SQLiteCredentialStore.create(at: scratch.url(), passphrase: composed, kdf: .testing)
        #expect(store.verifyPassphrase(decomposed))
        store.close()
        _ = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: decomposed)
    }

    @Test func emptyPassphraseIsRefusedAtCreateAndNoFileAppears() throws {
        let scratch = try Scratch()
        expectStoreError(.wrongPassphrase) {
            try SQLiteCredentialStore.create(at: scratch.url(), passphrase: "", kdf: .testing)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path).isEmpty)
    }

    @Test func defaultKeyDerivationParametersAreStoredInTheFile() async throws {
        let scratch = try Scratch()
        let clock = ContinuousClock()
        var store: SQLiteCredentialStore?
        let createTime = try clock.measure {
            store = try SQLiteCredentialStore.create(at: scratch.url(), passphrase: "correct horse")
        }
        #expect(store?.kdfParameters == .default)
        let verifyTime = clock.measure { #expect(store?.verifyPassphrase("correct horse") == true) }
        store?.close()
        let openTime = try clock.measure {
            store = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        }
        #expect(store?.kdfParameters == .default)
        print("scrypt N=2^15 r=8 p=1 (debug build): create \(createTime), open \(openTime), verify \(verifyTime)")

        let stored = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            row = db.execute("SELECT kdf_algorithm, kdf_rounds, kdf_block_size, kdf_parallelism, kdf_output_length,"
                             " length(kdf_salt) FROM meta").fetchone()
            print(*row, db.execute("PRAGMA user_version").fetchone()[0], db.execute("PRAGMA journal_mode").fetchone()[0])
            """,
            scratch.url().path
        )
        #expect(stored == "scrypt 32768 8 1 32 32 \(SQLiteCredentialStore.schemaVersion) wal\n")
    }

    @Test func parametersAlwaysComeFromTheFile() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch)
        let update = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("UPDATE meta SET " + sys.argv[2])
            db.commit()
            """
        // Valid but different parameters derive a different key: the key check catches it.
        try await python(update, scratch.url().path, "kdf_rounds = 32768")
        try expectOpenFails(scratch.url(), .wrongPassphrase)
        // Out-of-range parameters (a memory bomb, too weak, a non-power of two, a wrong key length) are damage.
        for change in [
            "kdf_rounds = 1099511627776", "kdf_rounds = 1000", "kdf_rounds = 1024", "kdf_output_length = 16",
            "kdf_algorithm = 'argon2id'", "kdf_salt = x''",
        ] {
            try await python(update, scratch.url().path, change)
            try expectOpenFails(scratch.url(), .corrupt)
        }
    }

    @Test func newerSchemaVersionIsRefusedNamingBothVersions() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch)
        try await python(
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('PRAGMA user_version = 7'); db.commit()",
            scratch.url().path
        )
        let error = try expectOpenFails(scratch.url(), .newerSchema)
        #expect(error?.message.contains("version 7") == true)
        #expect(error?.message.contains("version \(SQLiteCredentialStore.schemaVersion)") == true)
    }

    /// Files that are not passkey stores at all.
    enum ForeignFile: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case zeroLength, randomBytes, text, sqliteMagicThenGarbage, headerOnly

        var bytes: [UInt8] {
            let magic = Array("SQLite format 3\0".utf8)
            switch self {
            case .zeroLength: return []
            case .randomBytes: return PasskeyStoreIOTests.randomBytes(8192)
            case .text: return Array(String(repeating: "this is not a database\n", count: 200).utf8)
            case .sqliteMagicThenGarbage: return magic + PasskeyStoreIOTests.randomBytes(8192 - magic.count)
            case .headerOnly: return magic
            }
        }

        var testDescription: String { rawValue }
    }

    @Test(arguments: ForeignFile.allCases)
    func aFileThatIsNotAStoreIsCorruptAndUntouched(file: ForeignFile) throws {
        let scratch = try Scratch()
        try Data(file.bytes).write(to: scratch.url())
        let error = try expectOpenFails(scratch.url(), .corrupt)
        #expect(error?.message.contains(scratch.url().path) == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["passkeys.sqlite"])
    }

    @Test func anOrdinarySQLiteDatabaseIsNotAStore() async throws {
        let scratch = try Scratch()
        try await python(
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('CREATE TABLE t (x)'); db.commit()",
            scratch.url().path
        )
        let error = try expectOpenFails(scratch.url(), .corrupt)
        #expect(error?.message.contains("not a passkey store") == true)
    }

    @Test func aStoreWithAMissingTableIsCorrupt() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch)
        try await python(
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('DROP TABLE credentials'); db.commit()",
            scratch.url().path
        )
        let error = try expectOpenFails(scratch.url(), .corrupt)
        #expect(error?.message.contains("credentials table is missing") == true)
    }

    @Test func aStoreWithAMissingColumnIsCorrupt() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch)
        try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('DROP INDEX credentials_by_rp')
            db.execute('ALTER TABLE credentials DROP COLUMN user_display_name')
            db.commit()
            """,
            scratch.url().path
        )
        try expectOpenFails(scratch.url(), .corrupt)
    }

    @Test func aTruncatedStoreIsCorruptAndUntouched() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch, count: 40)
        let handle = try FileHandle(forUpdating: scratch.url())
        let size = try handle.seekToEnd()
        try handle.truncate(atOffset: size / 2)
        try handle.close()
        try expectOpenFails(scratch.url(), .corrupt)
    }

    @Test func aCorruptedPageIsDetectedAtOpen() async throws {
        let scratch = try Scratch()
        _ = try await populatedStore(scratch, count: 40)
        let root = try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(db.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'credentials_by_id'").fetchone()[0],
                  db.execute("PRAGMA page_size").fetchone()[0])
            """,
            scratch.url().path
        ).split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let (page, pageSize) = (try #require(root.first), try #require(root.last))
        let handle = try FileHandle(forUpdating: scratch.url())
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 64))
        try handle.close()
        let error = try expectOpenFails(scratch.url(), .corrupt)
        #expect(error?.message.contains("damaged") == true)
    }

    @Test func swappedSealedKeysFailAsCorruptNamingTheCredential() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let first = makeCredential(userHandle: [1])
        let second = makeCredential(userHandle: [2])
        let untouched = makeCredential(relyingParty: "example.org", userHandle: [3])
        for credential in [first, second, untouched] {
            try store.save(credential)
        }
        // Warm the key cache: it must notice the rows changed underneath it.
        _ = try store.allCredentials()
        try await python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            (a, ka), (b, kb) = db.execute("SELECT seq, sealed_private_key FROM credentials ORDER BY seq LIMIT 2")
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE credentials SET sealed_private_key = ? WHERE seq = ?", (kb, a))
            db.execute("UPDATE credentials SET sealed_private_key = ? WHERE seq = ?", (ka, b))
            db.execute("COMMIT")
            """,
            scratch.url().path
        )
        // Both rows are damaged: skipped by the CredentialStore calls, listed (and named) as damaged.
        #expect(try store.credential(id: first.id) == nil)
        let whileOpen = try store.damagedCredentials()
        #expect(Set(whileOpen.map(\.id)) == [first.id, second.id])
        #expect(whileOpen.allSatisfy { $0.reason == .failsIntegrityCheck })
        #expect(whileOpen.first { $0.id == first.id }?.description.contains(hex(first.id.prefix(8))) == true)
        store.close()

        let before = try digest(of: scratch.url())
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.credential(id: second.id) == nil)
        #expect(try reopened.credentials(forRelyingParty: "example.com").isEmpty)
        // Credentials that were not tampered with still work.
        #expect(try reopened.allCredentials().map(\.id) == [untouched.id])
        expectSame(try reopened.credential(id: untouched.id), untouched)
        reopened.close()
        #expect(try digest(of: scratch.url()) == before)
    }

    @Test func createNeverReplacesAnExistingFile() throws {
        let scratch = try Scratch()
        try Data("precious notes".utf8).write(to: scratch.url())
        let before = try digest(of: scratch.url())
        expectStoreError(.io) { try scratch.makeStore() }
        #expect(try digest(of: scratch.url()) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["passkeys.sqlite"])
    }

    @Test func createRefusesAnExistingStoreAndLeavesNoTemporaryFiles() async throws {
        let scratch = try Scratch()
        let credentials = try await populatedStore(scratch, count: 2)
        let before = try digest(of: scratch.url())
        expectStoreError(.io) { try scratch.makeStore(passphrase: "another") }
        #expect(try digest(of: scratch.url()) == before)
        // The store and the index of its passkeys' names (Docs/Store.md), nothing else.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path).sorted() == [
                "passkeys.index.json", "passkeys.sqlite",
            ])
        let store = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try store.allCredentials().count == credentials.count)
    }

    @Test func filesAreOwnerOnly() async throws {
        let scratch = try Scratch()
        let url = scratch.url("new/dir/passkeys.sqlite")
        let store = try SQLiteCredentialStore.create(at: url, passphrase: "pw", kdf: .testing)
        #expect(permissions(of: url) == 0o600)
        #expect(permissions(of: url.deletingLastPathComponent()) == 0o700)
        try store.save(makeCredential())
        let wal = URL(fileURLWithPath: url.path + "-wal")
        let shm = URL(fileURLWithPath: url.path + "-shm")
        #expect(permissions(of: wal) == 0o600)
        #expect(permissions(of: shm) == 0o600)
        #expect(permissions(of: url) == 0o600)
        _ = try store.deleteCredential(id: randomBytes(16))
        store.close()
        #expect(permissions(of: url) == 0o600)
        #expect(permissions(of: PasskeyFiles(store: url).identityIndex) == 0o600)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).sorted() == [
                "passkeys.index.json", "passkeys.sqlite",
            ])
    }

    @Test func aProcessKilledMidTransactionLosesNothingEarlier() async throws {
        let scratch = try Scratch()
        let earlier = try await populatedStore(scratch, count: 5)
        let writer = try ChildProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import os, sqlite3, sys, time
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("PRAGMA cache_size = 1")  # spill uncommitted pages into the WAL
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM credentials")
                for i in range(300):
                    db.execute("INSERT INTO credentials (credential_id, rp_id, user_handle, discoverable, backup_eligible,"
                               " backup_state, created_ms, sealed_private_key) VALUES (?, 'crash.example', x'01', 0, 0, 0,"
                               " 0, ?)", (os.urandom(16), os.urandom(1000)))
                print("ready", flush=True)
                time.sleep(60)
                """,
                scratch.url().path,
            ])
        let ready = await writer.stdoutLine(timeout: .seconds(60)) { $0.contains("ready") }
        #expect(ready != nil, "the writer never got ready: \(writer.errors)")

        // While the writer holds the lock: reads see the committed state, writes time out as busy.
        let contender = try SQLiteCredentialStore.open(
            at: scratch.url(),
            passphrase: "correct horse",
            busyTimeout: .milliseconds(50)
        )
        #expect(try contender.allCredentials().count == earlier.count)
        expectStoreError(.busy) { try contender.save(makeCredential(userHandle: [99])) }
        contender.close()
        let walSize = try FileManager.default.attributesOfItem(atPath: scratch.url().path + "-wal")[.size] as? Int
        #expect((walSize ?? 0) > 0, "the killed transaction should have left uncommitted frames in the WAL")

        writer.signal(SIGKILL)
        #expect(await writer.wait().signaled)

        let store = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        for credential in earlier {
            expectSame(try store.credential(id: credential.id), credential)
        }
        #expect(try store.credentials(forRelyingParty: "crash.example").isEmpty)
        let after = makeCredential(relyingParty: "after.example")
        try store.save(after)
        store.close()
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.allCredentials().count == earlier.count + 1)
    }
}

/// The key derivation settings and what the store reveals about itself.
struct KDFParametersAndOutputTests {
    @Test func parametersAreCheckedWhenMade() {
        #expect(KDFParameters.default.rounds == 32_768)
        #expect(KDFParameters.default.blockSize == 8)
        #expect(KDFParameters.default.parallelism == 1)
        #expect(KDFParameters.default.memoryByteCount == 32 << 20)
        #expect(KDFParameters.testing.rounds == 16384)
        #expect(KDFParameters.testing.memoryByteCount == KDFParameters.minimumMemoryByteCount)
        #expect(KDFParameters(rounds: 1 << 13, blockSize: 8, parallelism: 1) == nil)  // 8 MiB: below the floor
        #expect(KDFParameters(rounds: 1 << 10, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 1 << 18, blockSize: 8, parallelism: 1) != nil)  // 256 MiB: the ceiling
        #expect(KDFParameters(rounds: 1 << 19, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 1 << 16, blockSize: 8, parallelism: 16) == nil)  // 32× the default work
        #expect(KDFParameters.problem(rounds: 1 << 10, blockSize: 8, parallelism: 1)?.contains("minimum") == true)
        #expect(KDFParameters(rounds: 1 << 16, blockSize: 8, parallelism: 2) != nil)
        #expect(KDFParameters(rounds: 1000, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 1, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 0, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: -4, blockSize: 8, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 1 << 15, blockSize: 0, parallelism: 1) == nil)
        #expect(KDFParameters(rounds: 1 << 15, blockSize: 8, parallelism: 17) == nil)
        #expect(KDFParameters(rounds: 1 << 22, blockSize: 8, parallelism: 1) == nil)  // 4 GiB
        #expect(KDFParameters(rounds: 1 << 23, blockSize: 1, parallelism: 1) == nil)
    }

    @Test func descriptionAndDumpShowNoKeyMaterial() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        try store.save(makeCredential())
        _ = try store.allCredentials()
        var dumped = ""
        dump(store, to: &dumped)
        for text in [dumped, String(describing: store), String(reflecting: store)] {
            #expect(text.contains("passkeys.sqlite"))
            #expect(!text.contains("storeKey"))
            #expect(!text.contains("salt"))
            #expect(!text.contains("KeyCache"))
            #expect(!text.contains("SymmetricKey"))
        }
    }

    @Test func createFailsCleanlyWhenTheDirectoryCannotExist() throws {
        let scratch = try Scratch()
        try Data("a file, not a directory".utf8).write(to: scratch.url("blocker"))
        let error = expectStoreError(.io) {
            try SQLiteCredentialStore.create(
                at: scratch.url("blocker/passkeys.sqlite"), passphrase: "pw", kdf: .testing)
        }
        #expect(error?.message.contains("blocker") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path) == ["blocker"])
    }
}
