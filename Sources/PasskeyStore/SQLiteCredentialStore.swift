import CSQLite
import CTAP2
import Crypto
import Foundation
import Synchronization

/// The passkey store on disk: one SQLite database file, private keys sealed with AES-256-GCM.
///
/// The store key comes from the passphrase through scrypt, with the parameters and salt kept in the file.
/// Each private key is sealed under it with the credential ID as associated data, so a sealed key copied onto
/// another credential fails to open. Every write is one `BEGIN IMMEDIATE` transaction; the database runs in
/// WAL mode with `synchronous = FULL`, so a passkey that `save` reported is on disk, and a crash mid-write leaves
/// the earlier passkeys intact. Calls are serialized on one SQLite connection; the class is safe to share.
public final class SQLiteCredentialStore: CredentialStore {
    /// The `PRAGMA user_version` this program writes. Version 1 stores (before the CTAP 2.1 settings) are
    /// migrated in place when opened.
    public static let schemaVersion = 2
    /// The `PRAGMA application_id` that marks an SQLite file as a passkey store: "PKST".
    public static let applicationID: Int32 = 0x504B_5354

    /// Where the database file is.
    public let url: URL
    /// The key derivation parameters read from the file.
    public let kdfParameters: KDFParameters

    private let path: String
    private let salt: [UInt8]
    private let storeKey: SymmetricKey
    private let state: Mutex<State>

    /// The connection and the decrypted-key cache, reachable only under the lock.
    private struct State {
        var connection: SQLiteConnection?
        var keys = KeyCache()
    }

    private init(
        url: URL,
        path: String,
        kdfParameters: KDFParameters,
        salt: [UInt8],
        storeKey: SymmetricKey,
        connection: consuming sending SQLiteConnection
    ) {
        self.url = url
        self.path = path
        self.kdfParameters = kdfParameters
        self.salt = salt
        self.storeKey = storeKey
        self.state = Mutex(State(connection: connection))
    }

    deinit {
        close()
    }

    // MARK: Opening and creating

    /// The store's default location.
    ///
    /// `PASSKEY_STORE` wins when set; otherwise `$XDG_DATA_HOME/passkey/passkeys.sqlite` (an absolute
    /// `XDG_DATA_HOME` only, as the XDG base directory spec asks), else `~/.local/share/passkey/passkeys.sqlite`.
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit = environment["PASSKEY_STORE"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        let dataHome: URL
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            dataHome = URL(fileURLWithPath: xdg, isDirectory: true)
        } else if let home = environment["HOME"], !home.isEmpty {
            dataHome = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share")
        } else {
            dataHome = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        }
        return dataHome.appendingPathComponent("passkey", isDirectory: true).appendingPathComponent("passkeys.sqlite")
    }

    /// Creates a new, empty store at `url`, making its directory (mode 0700) if needed.
    ///
    /// The file is built under a temporary name in the same directory with mode 0600, flushed, and then linked
    /// into place, so other processes see either no store or a complete one. An existing file is never replaced:
    /// that fails with `.io`. An empty passphrase fails with `.wrongPassphrase`.
    public static func create(
        at url: URL,
        passphrase: String,
        kdf: KDFParameters = .default,
        busyTimeout: Duration = .seconds(5)
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let path = try filePath(of: url)
        guard
            let store = try createIfAbsent(
                url: url, path: path, passphrase: passphrase, kdf: kdf, busyTimeout: busyTimeout)
        else {
            throw CredentialStoreError(.io, "a file already exists at \(path); not replacing it with a new store")
        }
        return store
    }

    /// Opens the existing store at `url` with `passphrase`.
    ///
    /// Nothing is written until every check has passed: the file must be an SQLite database marked as a passkey
    /// store (else `.corrupt`), pass `PRAGMA quick_check` (else `.corrupt`), have a schema version this program
    /// knows (else `.newerSchema`), and the passphrase must open its key check (else `.wrongPassphrase`).
    /// The key derivation parameters always come from the file. Only then is a version 1 store upgraded to
    /// version 2, in place and in one transaction (see `migrate`).
    public static func open(
        at url: URL,
        passphrase: String,
        busyTimeout: Duration = .seconds(5)
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let path = try filePath(of: url)
        return try openExisting(url: url, path: path, busyTimeout: busyTimeout) {
            (parameters, salt) throws(CredentialStoreError) -> SymmetricKey in
            guard !passphrase.isEmpty else {
                throw CredentialStoreError(.wrongPassphrase, "the passphrase does not open the passkey store")
            }
            return try parameters.deriveKey(passphrase: passphrase, salt: salt)
        }
    }

    /// Opens the store at `url`, creating it (with `kdf`) when no file is there.
    public static func openOrCreate(
        at url: URL,
        passphrase: String,
        kdf: KDFParameters = .default,
        busyTimeout: Duration = .seconds(5)
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let path = try filePath(of: url)
        if case .missing = try StoreFiles.status(of: path),
            let store = try createIfAbsent(
                url: url, path: path, passphrase: passphrase, kdf: kdf, busyTimeout: busyTimeout)
        {
            return store
        }
        return try open(at: url, passphrase: passphrase, busyTimeout: busyTimeout)
    }

    /// Whether `passphrase` is this store's passphrase: the user-verification check.
    ///
    /// Derives a key with the file's parameters and compares it with the store key in constant time.
    /// Takes as long as one key derivation and does not block other calls on the store.
    public func verifyPassphrase(_ passphrase: String) -> Bool {
        guard !passphrase.isEmpty, let candidate = try? kdfParameters.deriveKey(passphrase: passphrase, salt: salt)
        else {
            return false
        }
        return constantTimeEquals(candidate, storeKey)
    }

    /// Closes the database and forgets the decrypted keys. Later calls fail with `.io`. Idempotent.
    public func close() {
        state.withLock { state in
            state.connection?.close()
            state.connection = nil
            state.keys.removeAll()
        }
    }

    // MARK: CredentialStore

    /// The passkeys of one relying party, newest first (creation date, then save order).
    public func credentials(forRelyingParty relyingPartyID: String) throws(CredentialStoreError)
        -> [StoredCredential]
    {
        try read("read the passkeys of \(relyingPartyID)") { (connection, keys) throws(CredentialStoreError) in
            let records = try sql("read the passkeys of \(relyingPartyID)") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectByRelyingParty).query([.text(relyingPartyID)], CredentialRecord.init)
            }
            return try records.map { (record) throws(CredentialStoreError) in try credential(from: record, keys: &keys)
            }
        }
    }

    /// Every passkey, ordered by relying party ID and newest first within each.
    public func allCredentials() throws(CredentialStoreError) -> [StoredCredential] {
        try read("read the passkeys") { (connection, keys) throws(CredentialStoreError) in
            let records = try sql("read the passkeys") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectAll).query([], CredentialRecord.init)
            }
            return try records.map { (record) throws(CredentialStoreError) in try credential(from: record, keys: &keys)
            }
        }
    }

    /// The passkey with this credential ID; its key comes from the decrypted-key cache when the row is unchanged.
    public func credential(id: [UInt8]) throws(CredentialStoreError) -> StoredCredential? {
        try read("read passkey \(hexPrefix(id))") { (connection, keys) throws(CredentialStoreError) in
            let records = try sql("read passkey \(hexPrefix(id))") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectByID).query([.blob(id)], CredentialRecord.init)
            }
            guard let record = records.first else { return nil }
            return try credential(from: record, keys: &keys)
        }
    }

    /// Stores a passkey in one transaction, first removing any discoverable passkey of the same relying party and
    /// user handle when `credential` is discoverable. A credential ID already in the store fails with `.io`.
    public func save(_ credential: StoredCredential) throws(CredentialStoreError) {
        let action = "save passkey \(hexPrefix(credential.id))"
        try validate(credential, action: action)
        let sealed = try seal(credential.privateKey, id: credential.id)
        let milliseconds = Int64((credential.creationDate.timeIntervalSince1970 * 1000).rounded())
        try write(action) { (connection, keys) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                if credential.isDiscoverable {
                    let replaced = try connection.prepared(SQL.deleteDiscoverable).query(
                        [.text(credential.relyingPartyID), .blob(credential.userHandle)]
                    ) { $0.blob(0) }
                    for id in replaced {
                        if let id { keys.remove(id) }
                    }
                }
                try connection.prepared(SQL.insert).run([
                    .blob(credential.id),
                    .text(credential.relyingPartyID),
                    credential.relyingPartyName.map(SQLiteValue.text) ?? .null,
                    .blob(credential.userHandle),
                    credential.userName.map(SQLiteValue.text) ?? .null,
                    credential.userDisplayName.map(SQLiteValue.text) ?? .null,
                    .integer(credential.isDiscoverable ? 1 : 0),
                    .integer(credential.backupEligible ? 1 : 0),
                    .integer(credential.backupState && credential.backupEligible ? 1 : 0),
                    .integer(milliseconds),
                    .blob(sealed),
                    .integer(Int64(credential.credentialProtection.rawValue)),
                    credential.credentialBlob.map(SQLiteValue.blob) ?? .null,
                    .integer(credential.hmacSecret ? 1 : 0),
                    .integer(credential.largeBlobKey ? 1 : 0),
                ])
            }
        }
    }

    /// Deletes one passkey; returns whether it existed.
    public func deleteCredential(id: [UInt8]) throws(CredentialStoreError) -> Bool {
        let action = "delete passkey \(hexPrefix(id))"
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            keys.remove(id)
            return try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deleteByID).run([.blob(id)]) > 0
            }
        }
    }

    /// The serialized large-blob array, or nil when none was ever written.
    public func largeBlobArray() throws(CredentialStoreError) -> [UInt8]? {
        let action = "read the large-blob array"
        return try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectLargeBlobArray).query([]) { $0.blob(0) }.first ?? nil
            }
        }
    }

    /// Replaces the serialized large-blob array in one transaction.
    public func saveLargeBlobArray(_ array: [UInt8]) throws(CredentialStoreError) {
        let action = "save the large-blob array"
        _ = try write(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.upsertLargeBlobArray).run([.blob(array)])
            }
        }
    }

    /// Replaces one passkey's account name and display name (nil clears them); returns whether it existed.
    public func updateUser(credentialID: [UInt8], userName: String?, userDisplayName: String?)
        throws(CredentialStoreError) -> Bool
    {
        let action = "update the account of passkey \(hexPrefix(credentialID))"
        return try write(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.updateUser).run([
                    userName.map(SQLiteValue.text) ?? .null,
                    userDisplayName.map(SQLiteValue.text) ?? .null,
                    .blob(credentialID),
                ]) > 0
            }
        }
    }

    /// authenticatorReset: deletes every passkey and the authenticator settings (PIN, counters, alwaysUv, minimum
    /// PIN length) in one transaction, keeping the store file and its passphrase.
    public func deleteAll() throws(CredentialStoreError) {
        try write("reset the authenticator") { (connection, keys) throws(CredentialStoreError) in
            keys.removeAll()
            try sql("reset the authenticator") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deleteAll).run([])
                try connection.prepared(SQL.deleteSettings).run([])
                try connection.prepared(SQL.deleteLargeBlobArray).run([])
            }
        }
    }

    /// The PIN state and authenticatorConfig settings; the defaults when none were saved. The PIN hash is unsealed
    /// with the store key; a row that fails its checks is `.corrupt`.
    public func settings() throws(CredentialStoreError) -> AuthenticatorSettings {
        let action = "read the authenticator settings"
        let rows = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectSettings).query([], SettingsRecord.init)
            }
        }
        guard let record = rows.first else { return AuthenticatorSettings() }
        return try settings(from: record)
    }

    /// Replaces the settings in one transaction; the PIN hash is sealed under the store key first.
    public func saveSettings(_ settings: AuthenticatorSettings) throws(CredentialStoreError) {
        let action = "save the authenticator settings"
        let range = 0...AuthenticatorSettings.maximumPINRetries
        guard range.contains(settings.pinRetries),
            (0...AuthenticatorSettings.maximumUVRetries).contains(settings.uvRetries),
            (4...63).contains(settings.minimumPINLength), (0...63).contains(settings.pinCodePointCount),
            settings.pinHash.map({ $0.count == 16 }) ?? true
        else {
            throw CredentialStoreError(.io, "cannot \(action): a value is out of range")
        }
        let sealedPIN = try settings.pinHash.map { (hash) throws(CredentialStoreError) in try sealPINHash(hash) }
        let relyingParties: String
        do {
            relyingParties = String(
                decoding: try JSONEncoder().encode(settings.minimumPINLengthRelyingParties), as: UTF8.self)
        } catch {
            throw CredentialStoreError(.io, "cannot \(action): the relying party list does not encode")
        }
        _ = try write(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.upsertSettings).run([
                    sealedPIN.map(SQLiteValue.blob) ?? .null,
                    .integer(Int64(settings.pinCodePointCount)),
                    .integer(Int64(settings.pinRetries)),
                    .integer(Int64(settings.uvRetries)),
                    .integer(Int64(settings.minimumPINLength)),
                    .text(relyingParties),
                    .integer(settings.alwaysUV ? 1 : 0),
                    .integer(settings.forcePINChange ? 1 : 0),
                ])
            }
        }
    }
}

extension SQLiteCredentialStore: CustomStringConvertible, CustomReflectable {
    /// Names the file only; the store key and decrypted keys never appear in output.
    public var description: String { "SQLiteCredentialStore(\(path), \(kdfParameters))" }

    /// Shows the file and the key derivation parameters only, so `dump` cannot reveal key material.
    public var customMirror: Mirror {
        Mirror(self, children: ["url": url, "kdfParameters": kdfParameters], displayStyle: .class)
    }
}

// MARK: - Opening

extension SQLiteCredentialStore {
    /// The first 16 bytes of every SQLite 3 database file.
    private static let sqliteMagic = Array("SQLite format 3\0".utf8)
    /// The plaintext sealed as the key check.
    private static let keyCheckLabel = Array("passkey-store key check v1".utf8)
    /// The associated data of the key check's seal.
    private static let keyCheckAAD = Array("passkey-store-key-check".utf8)
    /// The salt length written by `create`; `open` accepts 16 to 64 bytes.
    private static let saltByteCount = 32

    private static func filePath(of url: URL) throws(CredentialStoreError) -> String {
        guard url.isFileURL, !url.path.isEmpty else {
            throw CredentialStoreError(.io, "the passkey store must be a file, not \(url)")
        }
        return url.standardizedFileURL.path
    }

    /// `create`, except that it returns nil when a file is already at `path`.
    private static func createIfAbsent(
        url: URL,
        path: String,
        passphrase: String,
        kdf: KDFParameters,
        busyTimeout: Duration
    ) throws(CredentialStoreError) -> SQLiteCredentialStore? {
        guard !passphrase.isEmpty else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase must not be empty")
        }
        let directory = (path as NSString).deletingLastPathComponent
        try StoreFiles.makePrivateDirectory(directory)
        guard case .missing = try StoreFiles.status(of: path) else { return nil }

        let salt = StoreFiles.randomBytes(saltByteCount)
        let key = try kdf.deriveKey(passphrase: passphrase, salt: salt)
        let keyCheck = try sealKeyCheck(with: key)

        let name = (path as NSString).lastPathComponent
        let temporary = (directory as NSString).appendingPathComponent(
            ".\(name).\(hex(StoreFiles.randomBytes(8))).tmp"
        )
        try StoreFiles.createExclusive(temporary)
        do {
            try initialize(temporary: temporary, kdf: kdf, salt: salt, keyCheck: keyCheck)
            try StoreFiles.synchronize(temporary)
            guard try StoreFiles.moveWithoutReplacing(temporary, to: path) else {
                StoreFiles.removeDatabase(temporary)
                return nil
            }
            try StoreFiles.synchronize(directory, directory: true)
        } catch {
            StoreFiles.removeDatabase(temporary)
            throw error
        }
        return try openExisting(url: url, path: path, busyTimeout: busyTimeout) {
            (_, _) throws(CredentialStoreError) in key
        }
    }

    /// Writes the schema, the key derivation parameters and the key check into the empty file at `temporary`.
    private static func initialize(
        temporary: String,
        kdf: KDFParameters,
        salt: [UInt8],
        keyCheck: [UInt8]
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

    /// Opens and checks an existing store, then derives (or is given) the store key and verifies it.
    private static func openExisting(
        url: URL,
        path: String,
        busyTimeout: Duration,
        storeKey deriveKey: (KDFParameters, [UInt8]) throws(CredentialStoreError) -> SymmetricKey
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        switch try StoreFiles.status(of: path) {
        case .missing:
            throw CredentialStoreError(.io, "there is no passkey store at \(path)")
        case .other:
            throw CredentialStoreError(.io, "\(path) is not a regular file")
        case .regularFile(let size):
            guard size > 0 else {
                throw CredentialStoreError(.corrupt, "\(path) is empty: it is not a passkey store")
            }
        }
        // Look at the header ourselves first, so SQLite never touches a file that is not a database.
        let header = try StoreFiles.prefix(of: path, count: 100)
        guard header.count == 100, header.starts(with: sqliteMagic) else {
            throw CredentialStoreError(.corrupt, "\(path) is not a passkey store: it is not an SQLite database")
        }

        let connection = try sql("open the passkey store at \(path)") { () throws(SQLiteFailure) in
            try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
        }
        do {
            let milliseconds =
                busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
            connection.setBusyTimeout(milliseconds: Int32(clamping: max(0, milliseconds)))
            let (parameters, salt, keyCheck, version) = try checkedMeta(connection, path: path)
            let key = try deriveKey(parameters, salt)
            try verifyKeyCheck(keyCheck, with: key)
            try sql("open the passkey store at \(path)") { () throws(SQLiteFailure) in
                // Durable commits: a passkey the relying party has registered must not vanish in a power cut,
                // and writes are rare (registration, deletion), so the extra fsync costs nothing that matters.
                try connection.execute("PRAGMA synchronous = FULL; PRAGMA secure_delete = ON; PRAGMA query_only = OFF")
            }
            if version < Int64(schemaVersion) {
                try migrate(connection, from: version, path: path)
            }
            try checkStatements(connection, path: path)
            return SQLiteCredentialStore(
                url: url,
                path: path,
                kdfParameters: parameters,
                salt: salt,
                storeKey: key,
                connection: connection
            )
        } catch {
            connection.close()
            throw error
        }
    }

    /// The read-only checks of `open`: integrity, identity, schema version, tables and key derivation settings.
    private static func checkedMeta(
        _ connection: SQLiteConnection,
        path: String
    ) throws(CredentialStoreError) -> (KDFParameters, salt: [UInt8], keyCheck: [UInt8], version: Int64) {
        let action = "open the passkey store at \(path)"
        let damaged = "the passkey store at \(path) is damaged"
        let (checks, applicationID, version) = try sql(action) { () throws(SQLiteFailure) in
            try connection.execute("PRAGMA query_only = ON; PRAGMA trusted_schema = OFF")
            let checks = try connection.textColumn("PRAGMA quick_check")
            return (
                checks, try connection.integer("PRAGMA application_id"), try connection.integer("PRAGMA user_version")
            )
        }
        guard checks == ["ok"] else {
            let problem = checks.first.flatMap { $0 } ?? "no result"
            throw CredentialStoreError(.corrupt, "\(damaged): the integrity check reports “\(problem)”")
        }
        guard applicationID == Int64(Self.applicationID) else {
            throw CredentialStoreError(.corrupt, "\(path) is an SQLite database but not a passkey store")
        }
        let knownVersion = Int64(schemaVersion)
        guard let version, version <= knownVersion else {
            throw CredentialStoreError(
                .newerSchema,
                "the passkey store at \(path) has schema version \(version ?? -1), but this program knows only "
                    + "version \(knownVersion) and older; use a newer version of passkey"
            )
        }
        guard version >= 1 else {
            throw CredentialStoreError(.corrupt, "\(damaged): its schema version \(version) is unknown")
        }

        let (tables, metaRows) = try sql(action) { () throws(SQLiteFailure) in
            let tables = try connection.textColumn("SELECT name FROM sqlite_schema WHERE type = 'table'")
            guard tables.contains("meta") else { return (tables, [MetaRecord]()) }
            return (tables, try connection.prepared(SQL.selectMeta).query([], MetaRecord.init))
        }
        for table in ["meta", "credentials"] where !tables.contains(table) {
            throw CredentialStoreError(.corrupt, "\(damaged): the \(table) table is missing")
        }
        guard metaRows.count == 1, let meta = metaRows.first else {
            throw CredentialStoreError(.corrupt, "\(damaged): it has \(metaRows.count) settings rows instead of one")
        }
        guard meta.algorithm == KDFParameters.scryptAlgorithm else {
            throw CredentialStoreError(
                .corrupt, "\(damaged): unknown key derivation “\(meta.algorithm?.prefix(40) ?? "none")”")
        }
        guard let rounds = meta.rounds, let blockSize = meta.blockSize, let parallelism = meta.parallelism,
            let parameters = KDFParameters(
                rounds: Int(rounds), blockSize: Int(blockSize), parallelism: Int(parallelism)),
            meta.outputLength == Int64(KDFParameters.outputByteCount)
        else {
            throw CredentialStoreError(.corrupt, "\(damaged): its key derivation parameters are out of range")
        }
        guard let salt = meta.salt, (16...64).contains(salt.count), let keyCheck = meta.keyCheck else {
            throw CredentialStoreError(.corrupt, "\(damaged): its key derivation salt or key check is missing")
        }
        return (parameters, salt, keyCheck, version)
    }

    /// Prepares every statement, which proves that the tables and columns they name exist.
    private static func checkStatements(_ connection: SQLiteConnection, path: String) throws(CredentialStoreError) {
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

    /// Brings an older schema up to `schemaVersion` in place, in one transaction: either every step and the new
    /// `user_version` are committed, or the file is left exactly as it was.
    ///
    /// Version 1 → 2 adds the `authenticator_settings` table (PIN state and authenticatorConfig settings). Existing
    /// passkeys are untouched; a missing settings row means the defaults (no PIN, eight retries).
    private static func migrate(
        _ connection: SQLiteConnection, from version: Int64, path: String
    ) throws(CredentialStoreError) {
        try sql("upgrade the passkey store at \(path) from schema version \(version)") { () throws(SQLiteFailure) in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(SQLiteFailure) {
                // Re-read under the write lock: another process may have migrated the file meanwhile.
                let current = try connection.integer("PRAGMA user_version") ?? version
                if current < 2 {
                    try connection.execute(SQL.version2)
                }
                try connection.execute("PRAGMA user_version = \(schemaVersion)")
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    private static func sealKeyCheck(with key: SymmetricKey) throws(CredentialStoreError) -> [UInt8] {
        do {
            guard let combined = try AES.GCM.seal(keyCheckLabel, using: key, authenticating: keyCheckAAD).combined
            else {
                throw CredentialStoreError(.io, "could not seal the key check")
            }
            return Array(combined)
        } catch {
            throw CredentialStoreError(.io, "could not seal the key check")
        }
    }

    private static func verifyKeyCheck(_ sealed: [UInt8], with key: SymmetricKey) throws(CredentialStoreError) {
        let opened: Data
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            opened = try AES.GCM.open(box, using: key, authenticating: keyCheckAAD)
        } catch {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase does not open the passkey store")
        }
        guard Array(opened) == keyCheckLabel else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase does not open the passkey store")
        }
    }
}

// MARK: - Reading and writing

extension SQLiteCredentialStore {
    /// The associated data of a private key's seal: a fixed label, then the credential ID.
    private static let privateKeyAADLabel = Array("passkey-store-private-key\0".utf8)

    /// Runs `body` on the connection under the lock.
    private func read<Result: Sendable>(
        _ action: @autoclosure () -> String,
        _ body: (SQLiteConnection, inout KeyCache) throws(CredentialStoreError) -> Result
    ) throws(CredentialStoreError) -> Result {
        try state.withLock { (state) throws(CredentialStoreError) -> Result in
            guard let connection = state.connection else {
                throw CredentialStoreError(.io, "cannot \(action()): the passkey store is closed")
            }
            return try body(connection, &state.keys)
        }
    }

    /// Runs `body` inside one `BEGIN IMMEDIATE` transaction; commits if it returns, rolls back if anything throws.
    private func write<Result: Sendable>(
        _ action: @autoclosure () -> String,
        _ body: (SQLiteConnection, inout KeyCache) throws(CredentialStoreError) -> Result
    ) throws(CredentialStoreError) -> Result {
        try read(action()) { (connection, keys) throws(CredentialStoreError) -> Result in
            try Self.sql(action()) { () throws(SQLiteFailure) in try connection.prepared("BEGIN IMMEDIATE").run([]) }
            do throws(CredentialStoreError) {
                let result = try body(connection, &keys)
                try Self.sql(action()) { () throws(SQLiteFailure) in try connection.prepared("COMMIT").run([]) }
                return result
            } catch {
                if !connection.isAutocommit {
                    try? connection.execute("ROLLBACK")
                }
                throw error
            }
        }
    }

    @discardableResult
    private func sql<Result>(
        _ action: @autoclosure () -> String,
        _ body: () throws(SQLiteFailure) -> Result
    ) throws(CredentialStoreError) -> Result {
        try Self.sql(action(), body)
    }

    /// Runs SQLite calls, turning a failure into a `CredentialStoreError` that says what was being done.
    @discardableResult
    private static func sql<Result>(
        _ action: @autoclosure () -> String,
        _ body: () throws(SQLiteFailure) -> Result
    ) throws(CredentialStoreError) -> Result {
        do {
            return try body()
        } catch {
            switch error.primaryCode {
            case SQLITE_BUSY, SQLITE_LOCKED:
                throw CredentialStoreError(.busy, "cannot \(action()): the passkey store is in use by another process")
            case SQLITE_CORRUPT, SQLITE_NOTADB:
                throw CredentialStoreError(
                    .corrupt, "cannot \(action()): the passkey store is damaged (\(error.message))")
            case SQLITE_FULL:
                throw CredentialStoreError(.io, "cannot \(action()): the disk is full")
            case SQLITE_CONSTRAINT:
                throw CredentialStoreError(.io, "cannot \(action()): the store refused it (\(error.message))")
            default:
                throw CredentialStoreError(.io, "cannot \(action()): \(error.message)")
            }
        }
    }

    /// Refuses credentials the schema could not hold faithfully, before any transaction starts.
    private func validate(_ credential: StoredCredential, action: String) throws(CredentialStoreError) {
        guard (1...1023).contains(credential.id.count) else {
            throw CredentialStoreError(.io, "cannot \(action): a credential ID must be 1 to 1023 bytes")
        }
        guard (credential.credentialBlob?.count ?? 0) <= 32 else {
            throw CredentialStoreError(.io, "cannot \(action): a credBlob must be at most 32 bytes")
        }
        guard credential.userHandle.count <= 64 else {
            throw CredentialStoreError(.io, "cannot \(action): a user handle must be at most 64 bytes")
        }
        let seconds = credential.creationDate.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 9e12 else {
            throw CredentialStoreError(.io, "cannot \(action): the creation date is out of range")
        }
    }

    private func seal(_ key: P256.Signing.PrivateKey, id: [UInt8]) throws(CredentialStoreError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(
                key.rawRepresentation, using: storeKey, authenticating: Self.privateKeyAADLabel + id)
            guard let combined = box.combined else {
                throw CredentialStoreError(.io, "cannot seal the private key of passkey \(hexPrefix(id))")
            }
            return Array(combined)
        } catch {
            throw CredentialStoreError(.io, "cannot seal the private key of passkey \(hexPrefix(id))")
        }
    }

    /// Turns a row into a credential, taking the private key from the cache when its sealed bytes still match.
    private func credential(from record: CredentialRecord, keys: inout KeyCache) throws(CredentialStoreError)
        -> StoredCredential
    {
        guard let id = record.id, !id.isEmpty else {
            throw CredentialStoreError(
                .corrupt, "the passkey store is damaged: row \(record.sequence) has no credential ID")
        }
        guard let relyingPartyID = record.relyingPartyID, let userHandle = record.userHandle,
            let discoverable = record.discoverable, let backupEligible = record.backupEligible,
            let backupState = record.backupState, let milliseconds = record.creationMilliseconds,
            let sealed = record.sealedPrivateKey, let protectionLevel = record.credentialProtection,
            let protection = CredentialProtection(rawValue: Int(protectionLevel)), let hmacSecret = record.hmacSecret,
            let largeBlobKey = record.largeBlobKey
        else {
            throw CredentialStoreError(
                .corrupt, "the passkey store is damaged: passkey \(hexPrefix(id)) is missing required fields")
        }
        let privateKey: P256.Signing.PrivateKey
        if let cached = keys.key(id: id, sealed: sealed) {
            privateKey = cached
        } else {
            privateKey = try unseal(sealed, id: id)
            keys.insert(privateKey, id: id, sealed: sealed)
        }
        return StoredCredential(
            id: id,
            relyingPartyID: relyingPartyID,
            relyingPartyName: record.relyingPartyName,
            userHandle: userHandle,
            userName: record.userName,
            userDisplayName: record.userDisplayName,
            privateKey: privateKey,
            isDiscoverable: discoverable != 0,
            backupEligible: backupEligible != 0,
            backupState: backupState != 0,
            creationDate: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
            credentialProtection: protection,
            credentialBlob: record.credentialBlob,
            hmacSecret: hmacSecret != 0,
            largeBlobKey: largeBlobKey != 0
        )
    }

    /// The associated data of the PIN hash's seal.
    private static let pinHashAAD = Array("passkey-store-pin-hash".utf8)

    private func sealPINHash(_ hash: [UInt8]) throws(CredentialStoreError) -> [UInt8] {
        do {
            guard let combined = try AES.GCM.seal(hash, using: storeKey, authenticating: Self.pinHashAAD).combined
            else { throw CredentialStoreError(.io, "cannot seal the PIN hash") }
            return Array(combined)
        } catch {
            throw CredentialStoreError(.io, "cannot seal the PIN hash")
        }
    }

    private func settings(from record: SettingsRecord) throws(CredentialStoreError) -> AuthenticatorSettings {
        let damaged = CredentialStoreError(
            .corrupt, "the passkey store is damaged: its authenticator settings are invalid")
        guard let pinCodePoints = record.pinCodePoints, let pinRetries = record.pinRetries,
            let uvRetries = record.uvRetries, let minimumPINLength = record.minimumPINLength,
            let relyingPartiesText = record.relyingParties, let alwaysUV = record.alwaysUV,
            let forcePINChange = record.forcePINChange,
            let relyingParties = try? JSONDecoder().decode([String].self, from: Data(relyingPartiesText.utf8))
        else { throw damaged }
        var pinHash: [UInt8]? = nil
        if let sealed = record.sealedPINHash {
            do {
                let box = try AES.GCM.SealedBox(combined: sealed)
                pinHash = Array(try AES.GCM.open(box, using: storeKey, authenticating: Self.pinHashAAD))
            } catch {
                throw CredentialStoreError(
                    .corrupt, "the PIN hash fails its integrity check: the store was damaged or tampered with")
            }
            guard pinHash?.count == 16 else { throw damaged }
        }
        return AuthenticatorSettings(
            pinHash: pinHash,
            pinCodePointCount: Int(pinCodePoints),
            pinRetries: Int(pinRetries),
            uvRetries: Int(uvRetries),
            minimumPINLength: Int(minimumPINLength),
            minimumPINLengthRelyingParties: relyingParties,
            alwaysUV: alwaysUV != 0,
            forcePINChange: forcePINChange != 0
        )
    }

    private func unseal(_ sealed: [UInt8], id: [UInt8]) throws(CredentialStoreError) -> P256.Signing.PrivateKey {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            let raw = try AES.GCM.open(box, using: storeKey, authenticating: Self.privateKeyAADLabel + id)
            return try P256.Signing.PrivateKey(rawRepresentation: raw)
        } catch {
            throw CredentialStoreError(
                .corrupt,
                "the private key of passkey \(hexPrefix(id)) fails its integrity check: "
                    + "the store was damaged or tampered with"
            )
        }
    }
}

// MARK: - Rows, statements, helpers

/// A credentials row as read, before validation; every column is optional because the file may be damaged.
private struct CredentialRecord {
    var sequence: Int64
    var id: [UInt8]?
    var relyingPartyID: String?
    var relyingPartyName: String?
    var userHandle: [UInt8]?
    var userName: String?
    var userDisplayName: String?
    var discoverable: Int64?
    var backupEligible: Int64?
    var backupState: Int64?
    var creationMilliseconds: Int64?
    var sealedPrivateKey: [UInt8]?
    var credentialProtection: Int64?
    var credentialBlob: [UInt8]?
    var hmacSecret: Int64?
    var largeBlobKey: Int64?

    /// Reads the columns in `SQL.credentialColumns` order.
    init(_ row: SQLiteRow) {
        sequence = row.integer(0) ?? -1
        id = row.blob(1)
        relyingPartyID = row.text(2)
        relyingPartyName = row.text(3)
        userHandle = row.blob(4)
        userName = row.text(5)
        userDisplayName = row.text(6)
        discoverable = row.integer(7)
        backupEligible = row.integer(8)
        backupState = row.integer(9)
        creationMilliseconds = row.integer(10)
        sealedPrivateKey = row.blob(11)
        credentialProtection = row.integer(12)
        credentialBlob = row.blob(13)
        hmacSecret = row.integer(14)
        largeBlobKey = row.integer(15)
    }
}

/// The settings row as read.
private struct SettingsRecord {
    var sealedPINHash: [UInt8]?
    var pinCodePoints: Int64?
    var pinRetries: Int64?
    var uvRetries: Int64?
    var minimumPINLength: Int64?
    var relyingParties: String?
    var alwaysUV: Int64?
    var forcePINChange: Int64?

    init(_ row: SQLiteRow) {
        sealedPINHash = row.blob(0)
        pinCodePoints = row.integer(1)
        pinRetries = row.integer(2)
        uvRetries = row.integer(3)
        minimumPINLength = row.integer(4)
        relyingParties = row.text(5)
        alwaysUV = row.integer(6)
        forcePINChange = row.integer(7)
    }
}

/// The meta row as read.
private struct MetaRecord {
    var algorithm: String?
    var rounds: Int64?
    var blockSize: Int64?
    var parallelism: Int64?
    var outputLength: Int64?
    var salt: [UInt8]?
    var keyCheck: [UInt8]?

    init(_ row: SQLiteRow) {
        algorithm = row.text(0)
        rounds = row.integer(1)
        blockSize = row.integer(2)
        parallelism = row.integer(3)
        outputLength = row.integer(4)
        salt = row.blob(5)
        keyCheck = row.blob(6)
    }
}

/// Decrypted private keys by credential ID, each remembered with the sealed bytes it came from.
///
/// A hit needs the row's sealed bytes to match, so a row rewritten by another process is decrypted afresh.
struct KeyCache {
    /// Beyond this many keys the cache starts over, bounding memory.
    static let capacity = 4096

    private var entries: [[UInt8]: (sealed: [UInt8], key: P256.Signing.PrivateKey)] = [:]

    func key(id: [UInt8], sealed: [UInt8]) -> P256.Signing.PrivateKey? {
        guard let entry = entries[id], entry.sealed == sealed else { return nil }
        return entry.key
    }

    mutating func insert(_ key: P256.Signing.PrivateKey, id: [UInt8], sealed: [UInt8]) {
        if entries.count >= Self.capacity {
            entries.removeAll()
        }
        entries[id] = (sealed, key)
    }

    mutating func remove(_ id: [UInt8]) {
        entries[id] = nil
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}

/// The schema and every statement the store runs.
private enum SQL {
    static let schema = """
        CREATE TABLE meta (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            kdf_algorithm TEXT NOT NULL,
            kdf_rounds INTEGER NOT NULL,
            kdf_block_size INTEGER NOT NULL,
            kdf_parallelism INTEGER NOT NULL,
            kdf_output_length INTEGER NOT NULL,
            kdf_salt BLOB NOT NULL,
            key_check BLOB NOT NULL,
            created_ms INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE credentials (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            credential_id BLOB NOT NULL CHECK (length(credential_id) BETWEEN 1 AND 1023),
            rp_id TEXT NOT NULL,
            rp_name TEXT,
            user_handle BLOB NOT NULL CHECK (length(user_handle) <= 64),
            user_name TEXT,
            user_display_name TEXT,
            discoverable INTEGER NOT NULL CHECK (discoverable IN (0, 1)),
            backup_eligible INTEGER NOT NULL CHECK (backup_eligible IN (0, 1)),
            backup_state INTEGER NOT NULL CHECK (backup_state IN (0, 1) AND backup_state <= backup_eligible),
            created_ms INTEGER NOT NULL,
            sealed_private_key BLOB NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX credentials_by_id ON credentials (credential_id);
        CREATE INDEX credentials_by_rp ON credentials (rp_id, created_ms DESC, seq DESC);
        \(version2)
        """

    /// Schema version 2 (CTAP 2.1), both for new stores and as the in-place upgrade of version 1: per-credential
    /// extension data, and the PIN state and authenticatorConfig settings in one row at most (none means
    /// defaults). The PIN hash is sealed with AES-256-GCM under the store key.
    static let version2 = """
        ALTER TABLE credentials ADD COLUMN cred_protect INTEGER NOT NULL DEFAULT 1 CHECK (cred_protect IN (1, 2, 3));
        ALTER TABLE credentials ADD COLUMN cred_blob BLOB CHECK (cred_blob IS NULL OR length(cred_blob) <= 32);
        ALTER TABLE credentials ADD COLUMN hmac_secret INTEGER NOT NULL DEFAULT 0 CHECK (hmac_secret IN (0, 1));
        ALTER TABLE credentials ADD COLUMN large_blob_key INTEGER NOT NULL DEFAULT 0 CHECK (large_blob_key IN (0, 1));
        CREATE TABLE large_blob_array (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            serialized BLOB NOT NULL
        ) STRICT;
        CREATE TABLE authenticator_settings (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            sealed_pin_hash BLOB,
            pin_code_points INTEGER NOT NULL CHECK (pin_code_points BETWEEN 0 AND 63),
            pin_retries INTEGER NOT NULL CHECK (pin_retries BETWEEN 0 AND 8),
            uv_retries INTEGER NOT NULL CHECK (uv_retries BETWEEN 0 AND 8),
            min_pin_length INTEGER NOT NULL CHECK (min_pin_length BETWEEN 4 AND 63),
            min_pin_length_rp_ids TEXT NOT NULL,
            always_uv INTEGER NOT NULL CHECK (always_uv IN (0, 1)),
            force_pin_change INTEGER NOT NULL CHECK (force_pin_change IN (0, 1))
        ) STRICT;
        """

    static let selectSettings = """
        SELECT sealed_pin_hash, pin_code_points, pin_retries, uv_retries, min_pin_length, min_pin_length_rp_ids,
            always_uv, force_pin_change
        FROM authenticator_settings
        """

    static let upsertSettings = """
        INSERT OR REPLACE INTO authenticator_settings (singleton, sealed_pin_hash, pin_code_points, pin_retries,
            uv_retries, min_pin_length, min_pin_length_rp_ids, always_uv, force_pin_change)
        VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let deleteSettings = "DELETE FROM authenticator_settings"

    static let selectLargeBlobArray = "SELECT serialized FROM large_blob_array"
    static let upsertLargeBlobArray = "INSERT OR REPLACE INTO large_blob_array (singleton, serialized) VALUES (1, ?)"
    static let deleteLargeBlobArray = "DELETE FROM large_blob_array"

    static let insertMeta = """
        INSERT INTO meta (singleton, kdf_algorithm, kdf_rounds, kdf_block_size, kdf_parallelism, kdf_output_length,
            kdf_salt, key_check, created_ms)
        VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let selectMeta = """
        SELECT kdf_algorithm, kdf_rounds, kdf_block_size, kdf_parallelism, kdf_output_length, kdf_salt, key_check
        FROM meta
        """

    static let credentialColumns = """
        seq, credential_id, rp_id, rp_name, user_handle, user_name, user_display_name, discoverable,
        backup_eligible, backup_state, created_ms, sealed_private_key, cred_protect, cred_blob, hmac_secret,
        large_blob_key
        """

    static let selectByID = "SELECT \(credentialColumns) FROM credentials WHERE credential_id = ?"
    static let selectByRelyingParty =
        "SELECT \(credentialColumns) FROM credentials WHERE rp_id = ? ORDER BY created_ms DESC, seq DESC"
    static let selectAll =
        "SELECT \(credentialColumns) FROM credentials ORDER BY rp_id, created_ms DESC, seq DESC"

    static let insert = """
        INSERT INTO credentials (credential_id, rp_id, rp_name, user_handle, user_name, user_display_name,
            discoverable, backup_eligible, backup_state, created_ms, sealed_private_key, cred_protect, cred_blob,
            hmac_secret, large_blob_key)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static let deleteDiscoverable =
        "DELETE FROM credentials WHERE discoverable = 1 AND rp_id = ? AND user_handle = ? RETURNING credential_id"
    static let deleteByID = "DELETE FROM credentials WHERE credential_id = ?"
    static let updateUser = "UPDATE credentials SET user_name = ?, user_display_name = ? WHERE credential_id = ?"
    static let deleteAll = "DELETE FROM credentials"

    /// The statements `open` prepares up front to prove the schema has every column they use.
    static let all = [
        selectMeta, selectByID, selectByRelyingParty, selectAll, insert, deleteDiscoverable, deleteByID, deleteAll,
        selectSettings, upsertSettings, deleteSettings, updateUser, selectLargeBlobArray, upsertLargeBlobArray,
        deleteLargeBlobArray,
    ]
}

/// Lowercase hex of `bytes`.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var characters: [UInt8] = []
    for byte in bytes {
        characters.append(digits[Int(byte >> 4)])
        characters.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: characters, as: UTF8.self)
}

/// How errors name a credential: its first 8 bytes in hex, with an ellipsis if there are more.
func hexPrefix(_ id: [UInt8]) -> String {
    id.count > 8 ? hex(id.prefix(8)) + "…" : hex(id)
}

/// Compares two keys without branching on their contents.
func constantTimeEquals(_ lhs: SymmetricKey, _ rhs: SymmetricKey) -> Bool {
    lhs.withUnsafeBytes { left in
        rhs.withUnsafeBytes { right in
            guard left.count == right.count else { return false }
            var difference: UInt8 = 0
            for index in 0..<left.count {
                difference |= left[index] ^ right[index]
            }
            return difference == 0
        }
    }
}
