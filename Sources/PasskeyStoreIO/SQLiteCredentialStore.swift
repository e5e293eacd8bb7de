import Basics

import CSQLite
import CTAP2
import Crypto
import Foundation
import Synchronization

/// The passkey store on disk: one SQLite database file, private keys sealed with AES-256-GCM.
///
/// The store key comes from the passphrase through scrypt, with the parameters and salt kept in the file. Each
/// private key is sealed under it with the rest of its row as associated data, and the settings row carries an HMAC
/// (see `RowAuthentication`), so nothing that decides how a passkey may be used can be changed without the
/// passphrase. A row that fails these checks is reported as damaged and skipped; the others keep working.
///
/// Every write is one `BEGIN IMMEDIATE` transaction; the database runs in WAL mode with `synchronous = FULL`, so a
/// passkey that `save` reported is on disk, and a crash mid-write leaves the earlier passkeys intact. Calls are
/// serialized on one SQLite connection; the class is safe to share.
///
/// This file holds the type and its reads and writes (CRUD). Opening and creating are in `+Opening`, the schema
/// and its migrations in `+Schema`, transactions and SQLite errors in `+Transactions`, sealing and unsealing in
/// `+Sealing`, and the rows as read in `StoreRecords.swift`.
public final class SQLiteCredentialStore: CredentialStore {
    /// The `PRAGMA user_version` this program writes. Version 1 to 5 stores are migrated in place when opened.
    public static let schemaVersion = 6
    /// The `PRAGMA application_id` that marks an SQLite file as a passkey store: "PKST".
    public static let applicationID: Int32 = 0x504B_5354

    /// Where the database file is.
    public let url: URL
    /// The key derivation parameters read from the file.
    public let kdfParameters: KDFParameters

    let path: String
    private let salt: [UInt8]
    /// The sealed key check, for `verifyPassphrase`.
    private let keyCheck: [UInt8]
    /// The store key, here or in the agent (``StoreKeyring``).
    let keyring: any StoreKeyring
    private let state: Mutex<State>
    /// The index as this store last wrote it, with the file's stamp then (`SQLiteCredentialStore+Index.swift`).
    let indexCache = Mutex<IndexCache?>(nil)

    /// The connection, the decrypted-key cache and the damage reports, reachable only under the lock.
    private struct State {
        var connection: SQLiteConnection?
        var keys = KeyCache()
        var damageHandler: (@Sendable (DamagedCredential) -> Void)?
        var reportedDamage: Set<[UInt8]> = []
    }

    init(
        url: URL,
        path: String,
        kdfParameters: KDFParameters,
        salt: [UInt8],
        keyCheck: [UInt8],
        keyring: any StoreKeyring,
        connection: consuming sending SQLiteConnection
    ) {
        self.url = url
        self.path = path
        self.kdfParameters = kdfParameters
        self.salt = salt
        self.keyCheck = keyCheck
        self.keyring = keyring
        self.state = Mutex(State(connection: connection))
    }

    deinit {
        close()
    }

    /// Whether `passphrase` is this store's passphrase: the user-verification check.
    ///
    /// Derives a key with the file's parameters and checks that it opens the store's key check (AES-GCM, whose tag
    /// is compared in constant time): the store key itself is not needed, so this works as well when the key is in
    /// the agent. Takes as long as one key derivation and does not block other calls on the store.
    public func verifyPassphrase(_ passphrase: String) -> Bool {
        guard !passphrase.isEmpty, let candidate = try? kdfParameters.deriveKey(passphrase: passphrase, salt: salt)
        else {
            return false
        }
        return (try? Self.verifyKeyCheck(keyCheck, with: StoreKey(candidate))) != nil
    }

    /// Closes the database and forgets the decrypted keys. Later calls fail with `.io`. Idempotent.
    public func close() {
        // The index's journal is folded into its file first, so that the index left behind is one file.
        if state.withLock({ $0.connection != nil }) { compactIndex() }
        state.withLock { state in
            state.connection?.close()
            state.connection = nil
            state.keys.removeAll()
        }
    }

    /// The version `credential(id:)` compares cached rows with (`SQLiteConnection.databaseVersion`); nil when the
    /// store cannot watch the database for changes, and every lookup then reads its row.
    var databaseVersion: DatabaseVersion? {
        state.withLock { $0.connection?.databaseVersion }
    }

    /// Calls `handler` once per damaged row (per credential ID, while the store is open) that the `CredentialStore`
    /// methods skip. `passkey serve` prints these.
    public func onDamagedCredential(_ handler: @escaping @Sendable (DamagedCredential) -> Void) {
        state.withLock { $0.damageHandler = handler }
    }

    // MARK: Every row, damaged ones included

    /// Every row, ordered by relying party ID and newest first within each, damaged rows included.
    public func entries() throws(CredentialStoreError) -> [CredentialEntry] {
        try read("read the passkeys") { (connection, keys) throws(CredentialStoreError) in
            try sql("read the passkeys") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectAll).query([], CredentialRecord.init)
            }.map { record throws(CredentialStoreError) in try entry(from: record, keys: &keys) }
        }
    }

    /// The row with this credential ID, damaged or not; nil when there is none.
    public func entry(id: [UInt8]) throws(CredentialStoreError) -> CredentialEntry? {
        try read("read passkey \(hexPrefix(id))") { (connection, keys) throws(CredentialStoreError) in
            try sql("read passkey \(hexPrefix(id))") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectByID).query([.blob(id)], CredentialRecord.init)
            }.first.map { record throws(CredentialStoreError) in try entry(from: record, keys: &keys) }
        }
    }

    /// The rows that cannot be used, as `entries()` finds them.
    public func damagedCredentials() throws(CredentialStoreError) -> [DamagedCredential] {
        try entries().compactMap {
            if case .damaged(let damaged) = $0 { return damaged }
            return nil
        }
    }

    // MARK: CredentialStore

    /// The passkeys of one relying party, newest first (creation date, then save order); damaged rows are skipped
    /// and reported.
    public func credentials(forRelyingParty relyingPartyID: String) throws(CredentialStoreError)
        -> [StoredCredential]
    {
        try usable("read the passkeys of \(relyingPartyID)", SQL.selectByRelyingParty, [.text(relyingPartyID)])
    }

    /// Every usable passkey, ordered by relying party ID and newest first within each; damaged rows are skipped
    /// and reported.
    public func allCredentials() throws(CredentialStoreError) -> [StoredCredential] {
        try usable("read the passkeys", SQL.selectAll, [])
    }

    /// The passkey with this credential ID; nil when there is none or its row is damaged (then reported). The key
    /// comes from the decrypted-key cache when the row is unchanged.
    ///
    /// The getAssertion path. While no connection has committed anything since the row was last read, the cached
    /// credential is the row, and no SQL runs (`SQLiteConnection.databaseVersion`); otherwise the row is read, and an
    /// unchanged row is recognized in SQLite's own buffers and answered from the cache.
    public func credential(id: [UInt8]) throws(CredentialStoreError) -> StoredCredential? {
        let found = try read("read passkey \(hexPrefix(id))") {
            (connection, keys) throws(CredentialStoreError) -> CredentialEntry? in
            // Taken before the read: if anything commits during it, the next call sees another version.
            let version = connection.databaseVersion
            if let version, let cached = keys.credential(id: id, unchangedSince: version) {
                return .intact(cached)
            }
            let rows = try sql("read passkey \(hexPrefix(id))") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectByID).query([.blob(id)]) { row -> CachedOrRecord in
                    if let cached = keys.credential(id: id, row: row, sealedColumn: CredentialRecord.sealedColumn) {
                        return .cached(cached)
                    }
                    return .record(CredentialRecord(row))
                }
            }
            switch rows.first {
            case nil:
                keys.remove(id)
                return nil
            case .cached(let credential):
                keys.rowWasRead(id: id, at: version)
                return CredentialEntry.intact(credential)
            case .record(let record):
                return try entry(from: record, keys: &keys, readAt: version)
            }
        }
        switch found {
        case nil: return nil
        case .intact(let credential): return credential
        case .damaged(let damaged):
            report([damaged])
            return nil
        }
    }

    /// A row `credential(id:)` recognized in the cache, or one to decode.
    private enum CachedOrRecord {
        case cached(StoredCredential)
        case record(CredentialRecord)
    }

    /// Stores a passkey in one transaction, first removing any discoverable passkey of the same relying party and
    /// user handle when `credential` is discoverable. A credential ID already in the store fails with `.io`.
    public func save(_ credential: StoredCredential) throws(CredentialStoreError) {
        let action = "save passkey \(hexPrefix(credential.id))"
        try validate(credential, action: action)
        let values = Self.values(of: credential)
        let sealed = try seal(credential.privateKey, values: values)
        try write(action) { (connection, keys) throws(CredentialStoreError) in
            let replaced = try sql(action) { () throws(SQLiteFailure) -> [[UInt8]] in
                var replaced: [[UInt8]] = []
                if credential.isDiscoverable {
                    replaced = try connection.prepared(SQL.deleteDiscoverable).query(
                        [.text(credential.relyingPartyID), .blob(credential.userHandle)]
                    ) { $0.blob(0) }.compactMap { $0 }
                    for id in replaced { keys.remove(id) }
                }
                try connection.prepared(SQL.insert).run(values + [.blob(sealed)])
                return replaced
            }
            updateIndex(connection, keys: &keys) { _ in
                replaced.filter { $0 != credential.id }.map { .remove($0) } + [.put(Self.identity(credential))]
            }
        }
    }

    /// Deletes one passkey, damaged or not, from its row alone (nothing is unsealed); returns whether it existed.
    public func deleteCredential(id: [UInt8]) throws(CredentialStoreError) -> Bool {
        let action = "delete passkey \(hexPrefix(id))"
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            keys.remove(id)
            let deleted = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deleteByID).run([.blob(id)]) > 0
            }
            updateIndex(connection, keys: &keys) { _ in [.remove(id)] }
            return deleted
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

    /// Replaces one passkey's account name and display name (nil clears them), sealing its key again since the
    /// seal covers them; returns whether it existed. A damaged row fails with `.corrupt` and is left as it is.
    public func updateUser(credentialID: [UInt8], userName: String?, userDisplayName: String?)
        throws(CredentialStoreError) -> Bool
    {
        let action = "update the account of passkey \(hexPrefix(credentialID))"
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            let records = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectByID).query([.blob(credentialID)], CredentialRecord.init)
            }
            guard let record = records.first else { return false }
            guard case .intact(var credential) = try entry(from: record, keys: &keys) else {
                throw CredentialStoreError(
                    .corrupt, "cannot \(action): its row fails its integrity check (delete it and register again)")
            }
            credential.userName = userName
            credential.userDisplayName = userDisplayName
            let values = Self.values(of: credential)
            let sealed = try seal(credential.privateKey, values: values)
            keys.remove(credentialID)
            let updated = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.updateUser).run([
                    values[CredentialColumn.userName.rawValue], values[CredentialColumn.userDisplayName.rawValue],
                    .blob(sealed), .blob(credentialID),
                ]) > 0
            }
            updateIndex(connection, keys: &keys) { identities in
                identities.filter { $0.kind == .passkey && $0.credentialID == credentialID }.map { identity in
                    var renamed = identity
                    renamed.userName = userName
                    renamed.userDisplayName = userDisplayName
                    return .put(renamed)
                }
            }
            return updated
        }
    }

    /// authenticatorReset: deletes every passkey and puts the authenticator settings (PIN, counters, alwaysUv,
    /// minimum PIN length) back to their defaults in one transaction, keeping the store file and its passphrase.
    public func deleteAll() throws(CredentialStoreError) {
        let defaults = try Self.settingsRow(AuthenticatorSettings(), keyring: keyring)
        try write("reset the authenticator") { (connection, keys) throws(CredentialStoreError) in
            keys.removeAll()
            try sql("reset the authenticator") { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deleteAll).run([])
                try connection.prepared(SQL.upsertSettings).run(defaults)
                try connection.prepared(SQL.deleteLargeBlobArray).run([])
            }
            updateIndex(connection, keys: &keys) { _ in [.clear] }
        }
    }

    /// The PIN state and authenticatorConfig settings. The row must be there and its MAC must match; the PIN hash
    /// is unsealed with the store key. A row that fails any check is `.corrupt`: falling back to the defaults would
    /// drop the PIN.
    public func settings() throws(CredentialStoreError) -> AuthenticatorSettings {
        let action = "read the authenticator settings"
        let rows = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectSettings).query([], SettingsRecord.init)
            }
        }
        guard let record = rows.first else {
            throw CredentialStoreError(
                .corrupt, "the passkey store is damaged: its authenticator settings (PIN state) are missing")
        }
        return try Self.settings(from: record, keyring: keyring)
    }

    /// Replaces the settings in one transaction; the PIN hash is sealed under the store key and the row MACed.
    public func saveSettings(_ settings: AuthenticatorSettings) throws(CredentialStoreError) {
        let action = "save the authenticator settings"
        let row = try Self.settingsRow(settings, keyring: keyring)
        _ = try write(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.upsertSettings).run(row)
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

// MARK: - Reading and listing

extension SQLiteCredentialStore {
    /// Runs `body` on the connection under the lock.
    func read<Result: Sendable>(
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

    /// Runs one query for credential rows and returns the usable ones; damaged rows are reported (once each) and
    /// skipped.
    private func usable(
        _ action: @autoclosure () -> String,
        _ statement: String,
        _ parameters: [SQLiteValue]
    ) throws(CredentialStoreError) -> [StoredCredential] {
        let entries = try read(action()) { (connection, keys) throws(CredentialStoreError) -> [CredentialEntry] in
            try sql(action()) { () throws(SQLiteFailure) in
                try connection.prepared(statement).query(parameters, CredentialRecord.init)
            }.map { record throws(CredentialStoreError) in try entry(from: record, keys: &keys) }
        }
        var credentials: [StoredCredential] = []
        credentials.reserveCapacity(entries.count)
        var damaged: [DamagedCredential] = []
        for entry in entries {
            switch entry {
            case .intact(let credential): credentials.append(credential)
            case .damaged(let row): damaged.append(row)
            }
        }
        if !damaged.isEmpty {
            report(damaged)
        }
        return credentials
    }

    /// Passes each damaged row not reported before to the damage handler.
    private func report(_ damaged: [DamagedCredential]) {
        let (fresh, handler) = state.withLock { state in
            (damaged.filter { state.reportedDamage.insert($0.id).inserted }, state.damageHandler)
        }
        if let handler {
            fresh.forEach(handler)
        }
    }
}

/// How errors name a credential: its first 8 bytes in hex, with an ellipsis if there are more.
func hexPrefix(_ id: [UInt8]) -> String {
    id.count > 8 ? id.prefix(8).hexString + "…" : id.hexString
}
