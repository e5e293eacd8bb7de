import Basics

import CSQLite
import CTAP2
import Crypto
import Foundation

extension SQLiteCredentialStore {

    // MARK: Opening and creating

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
    /// The key derivation parameters always come from the file and must be within `KDFParameters`' floor and
    /// ceiling. These checks run on a read-only connection that never checkpoints, so a store that fails them is
    /// left byte for byte as it was, even with committed data waiting in its WAL. A store that SQLite could only
    /// open read-only (the file, a side file or its directory not writable) is refused with `.io` before SQLite
    /// touches it. Only then is an older store upgraded, in place and in one transaction (see `migrate`).
    public static func open(
        at url: URL,
        passphrase: String,
        busyTimeout: Duration = .seconds(5)
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        try open(at: url, passphrase: passphrase, busyTimeout: busyTimeout, fileAccess: .system)
    }

    /// `open(at:passphrase:busyTimeout:)` with the check for a store SQLite could only read answered by
    /// `fileAccess`: the tests of that check run as root too, where `access(2)` ignores the permission bits.
    static func open(
        at url: URL,
        passphrase: String,
        busyTimeout: Duration,
        fileAccess: FileAccess
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let path = try filePath(of: url)
        return try openExisting(url: url, path: path, busyTimeout: busyTimeout, fileAccess: fileAccess) {
            (parameters, salt) throws(CredentialStoreError) -> any StoreKeyring in
            try derivedKey(parameters, salt: salt, passphrase: passphrase)
        }
    }

    /// Opens the existing store at `url` with its key held elsewhere (the agent): every seal is opened through
    /// `keyring`, which must open the store's key check (else `.wrongPassphrase`). The same checks as
    /// `open(at:passphrase:busyTimeout:)` run first.
    public static func open(
        at url: URL,
        keyring: any StoreKeyring,
        busyTimeout: Duration = .seconds(5)
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let path = try filePath(of: url)
        return try openExisting(url: url, path: path, busyTimeout: busyTimeout, fileAccess: .system) {
            (_, _) throws(CredentialStoreError) -> any StoreKeyring in keyring
        }
    }

    /// The key of the existing store at `url`, derived from `passphrase` and checked against the store's key check,
    /// without opening the store for writing or changing anything in it: what the agent keeps (`passkey unlock`).
    /// Fails as `open` does (`.wrongPassphrase` for a passphrase that does not open it).
    public static func storeKey(at url: URL, passphrase: String) throws(CredentialStoreError) -> StoreKey {
        let path = try filePath(of: url)
        let (checker, meta) = try checkedFile(path: path, busyTimeout: .seconds(5), fileAccess: .system)
        defer { checker.close() }
        let key = try derivedKey(meta.parameters, salt: meta.salt, passphrase: passphrase)
        try verifyKeyCheck(meta.keyCheck, with: key)
        return key
    }

    private static func derivedKey(
        _ parameters: KDFParameters, salt: [UInt8], passphrase: String
    ) throws(CredentialStoreError) -> StoreKey {
        guard !passphrase.isEmpty else {
            throw CredentialStoreError(.wrongPassphrase, "the passphrase does not open the passkey store")
        }
        return StoreKey(try parameters.deriveKey(passphrase: passphrase, salt: salt))
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
}

// MARK: - Opening

extension SQLiteCredentialStore {
    /// The first 16 bytes of every SQLite 3 database file.
    private static let sqliteMagic = Array("SQLite format 3\0".utf8)
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
        let settings = try settingsRow(AuthenticatorSettings(), keyring: StoreKey(key))

        let name = (path as NSString).lastPathComponent
        let temporary = (directory as NSString).appendingPathComponent(
            ".\(name).\(StoreFiles.randomBytes(8).hexString).tmp"
        )
        try StoreFiles.createExclusive(temporary)
        do {
            try initialize(temporary: temporary, kdf: kdf, salt: salt, keyCheck: keyCheck, settings: settings)
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
        return try openExisting(url: url, path: path, busyTimeout: busyTimeout, fileAccess: .system) {
            (_, _) throws(CredentialStoreError) -> any StoreKeyring in StoreKey(key)
        }
    }

    /// The file's status, header and settings checked on a read-only connection that never checkpoints (returned
    /// open, for the caller to close), and what the settings say.
    private static func checkedFile(
        path: String, busyTimeout: Duration, fileAccess: FileAccess
    ) throws(CredentialStoreError) -> (
        SQLiteConnection, (parameters: KDFParameters, salt: [UInt8], keyCheck: [UInt8], version: Int64)
    ) {
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

        // SQLite gives new -wal and -shm files the store file's mode: never let it open a file it cannot write.
        try StoreFiles.checkWritable(path, fileAccess: fileAccess)
        let action = "open the passkey store at \(path)"
        let busyMilliseconds = Int32(clamping: max(0, busyTimeout.inMilliseconds))

        // Every check runs on a read-only connection that cannot checkpoint: a store that fails one keeps its main
        // file byte for byte, even with committed transactions still in its WAL.
        let checker = try sql(action) { () throws(SQLiteFailure) in
            let connection = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
            try connection.setCheckpointOnClose(false)
            return connection
        }
        checker.setBusyTimeout(milliseconds: busyMilliseconds)
        do {
            let meta = try checkedMeta(checker, path: path)
            return (checker, (meta.0, meta.salt, meta.keyCheck, meta.version))
        } catch {
            checker.close()
            throw error
        }
    }

    /// Opens and checks an existing store, then derives (or is given) the store key and verifies it.
    private static func openExisting(
        url: URL,
        path: String,
        busyTimeout: Duration,
        fileAccess: FileAccess,
        storeKey deriveKey: (KDFParameters, [UInt8]) throws(CredentialStoreError) -> any StoreKeyring
    ) throws(CredentialStoreError) -> SQLiteCredentialStore {
        let action = "open the passkey store at \(path)"
        let busyMilliseconds = Int32(clamping: max(0, busyTimeout.inMilliseconds))
        let (checker, meta) = try checkedFile(path: path, busyTimeout: busyTimeout, fileAccess: fileAccess)
        defer { checker.close() }
        let (parameters, salt, keyCheck, version) = meta
        let key = try deriveKey(parameters, salt)
        try verifyKeyCheck(keyCheck, with: key)
        if version == Int64(schemaVersion) {
            try checkStatements(checker, path: path)
        }
        checker.close()

        let connection = try sql(action) { () throws(SQLiteFailure) in
            let connection = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
            try connection.setCheckpointOnClose(false)
            return connection
        }
        do throws(CredentialStoreError) {
            connection.setBusyTimeout(milliseconds: busyMilliseconds)
            guard !connection.isReadOnly else {
                throw CredentialStoreError(
                    .io, "the passkey store at \(path) can only be opened read-only; passkey needs to write to it")
            }
            try sql(action) { () throws(SQLiteFailure) in
                // Durable commits: a passkey the relying party has registered must not vanish in a power cut,
                // and writes are rare (registration, deletion), so the extra fsync costs nothing that matters.
                try connection.execute(
                    "PRAGMA synchronous = FULL; PRAGMA secure_delete = ON; PRAGMA trusted_schema = OFF")
            }
            if version < Int64(schemaVersion) {
                try migrate(connection, from: version, path: path, keyring: key)
            } else {
                try checkStatements(connection, path: path)
            }
            try sql(action) { () throws(SQLiteFailure) in
                try connection.setCheckpointOnClose(true)
                try connection.startWatchingForChanges()
            }
            let store = SQLiteCredentialStore(
                url: url,
                path: path,
                kdfParameters: parameters,
                salt: salt,
                keyCheck: keyCheck,
                keyring: key,
                connection: connection
            )
            // Unlocked: the index of names beside the store is written afresh. It is a convenience, so a failure
            // here (a busy store, say) leaves the old one and never fails the opening.
            try? store.rebuildIndex()
            return store
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
            meta.outputLength == Int64(KDFParameters.outputByteCount)
        else {
            throw CredentialStoreError(.corrupt, "\(damaged): its key derivation parameters are missing")
        }
        let (n, r, p) = (Int(clamping: rounds), Int(clamping: blockSize), Int(clamping: parallelism))
        guard let parameters = KDFParameters(rounds: n, blockSize: r, parallelism: p) else {
            let problem = KDFParameters.problem(rounds: n, blockSize: r, parallelism: p) ?? "out of range"
            throw CredentialStoreError(
                .corrupt,
                "the passkey store at \(path) asks for key derivation scrypt(N=\(n), r=\(r), p=\(p)), which passkey "
                    + "refuses: \(problem)")
        }
        guard let salt = meta.salt, (16...64).contains(salt.count), let keyCheck = meta.keyCheck else {
            throw CredentialStoreError(.corrupt, "\(damaged): its key derivation salt or key check is missing")
        }
        return (parameters, salt, keyCheck, version)
    }
}
