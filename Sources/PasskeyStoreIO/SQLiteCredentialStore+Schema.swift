import CSQLite
import CTAP2
import Crypto
import Foundation

/// The schema: written into a new store, checked in an existing one, and brought up to date in an older one.
extension SQLiteCredentialStore {
    /// Writes the schema, the key derivation parameters, the key check and the default settings row into the empty
    /// file at `temporary`.
    static func initialize(
        temporary: String,
        kdf: KDFParameters,
        salt: [UInt8],
        keyCheck: [UInt8],
        settings: [SQLiteValue]
    ) throws(CredentialStoreError) {
        try sql("create the passkey store") { () throws(SQLiteFailure) in
            let connection = try SQLiteConnection(path: temporary, flags: SQLITE_OPEN_READWRITE)
            defer { connection.close() }
            try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL")
            try connection.execute("BEGIN IMMEDIATE")
            do throws(SQLiteFailure) {
                try connection.execute(SQL.schema)
                try connection.execute("PRAGMA application_id = \(applicationID)")
                try connection.execute("PRAGMA user_version = \(schemaVersion)")
                try connection.prepared(SQL.insertMeta).run([
                    .text(KDFParameters.scryptAlgorithm),
                    .integer(Int64(kdf.rounds)),
                    .integer(Int64(kdf.blockSize)),
                    .integer(Int64(kdf.parallelism)),
                    .integer(Int64(KDFParameters.outputByteCount)),
                    .blob(salt),
                    .blob(keyCheck),
                    .integer(Int64((Date().timeIntervalSince1970 * 1000).rounded())),
                ])
                try connection.prepared(SQL.upsertSettings).run(settings)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
            // Move everything from the WAL into the main file: only the main file is linked into place.
            let checkpoint = try connection.prepared("PRAGMA wal_checkpoint(TRUNCATE)").query([]) { $0.integer(0) }
            guard checkpoint.first == 0 else {
                throw SQLiteFailure(code: SQLITE_BUSY, message: "could not checkpoint the new store")
            }
        }
    }

    /// Prepares every statement, which proves that the tables and columns they name exist.
    static func checkStatements(_ connection: SQLiteConnection, path: String) throws(CredentialStoreError) {
        do {
            for statement in SQL.all {
                _ = try connection.prepared(statement)
            }
        } catch {
            throw CredentialStoreError(
                .corrupt,
                "the passkey store at \(path) is damaged: its tables do not have the expected columns (\(error.message))"
            )
        }
    }

    /// Brings an older schema up to `schemaVersion` in place, in one transaction: either every step, the statement
    /// check and the new `user_version` are committed, or the file is left exactly as it was.
    ///
    /// - Version 1 → 2 adds the CTAP 2.1 columns and the `authenticator_settings` and `large_blob_array` tables.
    /// - Version 2 → 3 authenticates the metadata (`RowAuthentication`): every private key that opens with its old
    ///   associated data (the credential ID) is sealed again with the whole row as associated data; a row whose key
    ///   does not open is left as it is, and so stays reported as damaged. The settings row gets its MAC if its
    ///   PIN hash opens (a missing row becomes the defaults: no PIN, eight retries, as version 2 read it); one that
    ///   does not open is left without a MAC, so it stays refused as damaged.
    /// - Version 3 → 4 adds the `passwords` table; no existing row changes.
    /// - Version 4 → 5 adds thirdPartyPayment, the device secret and the notes columns; no existing row changes (the
    ///   new columns are authenticated only when set, `RowAuthentication`).
    /// - Version 5 → 6 adds the columns that record when a signal hid a passkey and when a password was last filled,
    ///   and the `one_time_codes` table; no existing row changes.
    static func migrate(
        _ connection: SQLiteConnection, from version: Int64, path: String, keyring: any StoreKeyring
    ) throws(CredentialStoreError) {
        let action = "upgrade the passkey store at \(path) from schema version \(version)"
        try sql(action) { () throws(SQLiteFailure) in try connection.execute("BEGIN IMMEDIATE") }
        do throws(CredentialStoreError) {
            // Re-read under the write lock: another process may have migrated the file meanwhile.
            let current = try sql(action) { () throws(SQLiteFailure) in
                try connection.integer("PRAGMA user_version") ?? version
            }
            if current < 2 {
                try sql(action) { () throws(SQLiteFailure) in try connection.execute(SQL.version2) }
            }
            if current < 3 {
                try sql(action) { () throws(SQLiteFailure) in try connection.execute(SQL.version3) }
            }
            if current < 4 {
                try sql(action) { () throws(SQLiteFailure) in try connection.execute(SQL.version4) }
            }
            if current < 5 {
                try sql(action) { () throws(SQLiteFailure) in try connection.execute(SQL.version5) }
            }
            if current < 6 {
                try sql(action) { () throws(SQLiteFailure) in try connection.execute(SQL.version6) }
            }
            // With every column in place, since the statements that read and write rows name them all.
            if current < 3 {
                try authenticateRows(connection, action: action, keyring: keyring)
            }
            try sql(action) { () throws(SQLiteFailure) in
                try connection.execute("PRAGMA user_version = \(schemaVersion)")
            }
            try checkStatements(connection, path: path)
            try sql(action) { () throws(SQLiteFailure) in try connection.execute("COMMIT") }
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The version 2 → 3 step of `migrate`, inside its transaction.
    private static func authenticateRows(
        _ connection: SQLiteConnection, action: String, keyring: any StoreKeyring
    ) throws(CredentialStoreError) {
        let records = try sql(action) { () throws(SQLiteFailure) in
            try connection.prepared("SELECT \(SQL.credentialColumns) FROM credentials").query([], CredentialRecord.init)
        }
        for record in records {
            guard let id = record.blob(.id), let sealed = record.sealedPrivateKey,
                let key = try RowAuthentication.unseal(
                    sealed, aad: RowAuthentication.legacyCredentialAAD(id: id), with: keyring)
            else { continue }
            let resealed = try RowAuthentication.seal(
                key, aad: RowAuthentication.credentialAAD(record.values), with: keyring)
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.updateSealedKey).run([.blob(resealed), .integer(record.sequence)])
            }
        }
        let settingsRows = try sql(action) { () throws(SQLiteFailure) in
            try connection.prepared(SQL.selectSettings).query([], SettingsRecord.init)
        }
        guard let record = settingsRows.first else {
            let defaults = try settingsRow(AuthenticatorSettings(), keyring: keyring)
            try sql(action) { () throws(SQLiteFailure) in try connection.prepared(SQL.upsertSettings).run(defaults) }
            return
        }
        var withMAC = record
        withMAC.mac = try RowAuthentication.settingsMAC(record.values, with: keyring)
        guard (try? settings(from: withMAC, keyring: keyring)) != nil else { return }
        try sql(action) { () throws(SQLiteFailure) in
            try connection.prepared(SQL.upsertSettings).run(record.values + [.blob(withMAC.mac ?? [])])
        }
    }
}
