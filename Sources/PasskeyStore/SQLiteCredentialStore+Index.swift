import CTAP2
import Foundation

/// Keeping the credential identity index (`CredentialIdentityIndex`) beside the store up to date.
///
/// Every change runs inside the store's own write transaction, so SQLite's write lock orders the index updates of
/// every process using the store, and each update reads the file as the last writer left it. The index is a
/// convenience: a failure to write it never fails the store operation; the file is removed instead (then it reads as
/// missing) and is rebuilt on the next write or unlock.
extension SQLiteCredentialStore {
    /// The index file of this store (`CredentialIdentityIndex.url(forStore:)`).
    public var indexURL: URL { CredentialIdentityIndex.url(forStore: url) }

    /// Writes the index again from the store's usable rows, keeping the ranks and last-use times of the index
    /// there was, if it can be read. Opening the store does this.
    public func rebuildIndex() throws(CredentialStoreError) {
        let previous = try? CredentialIdentityIndex.read(at: indexURL.path)
        try write("rebuild the passkey index") { (connection, keys) throws(CredentialStoreError) in
            var identities = try self.identities(connection, keys: &keys)
            if let previous {
                for position in identities.indices {
                    guard let old = previous.identity(credentialID: identities[position].credentialID) else { continue }
                    identities[position].rank = old.rank
                    identities[position].lastUsedDate = old.lastUsedDate
                }
            }
            self.writeIndex(identities)
        }
    }

    /// Records that the authenticator signed in with this passkey: its last-use time in the index. Best effort:
    /// nothing the platform sees depends on it.
    public func recordUse(ofCredential id: [UInt8], at date: Date) {
        try? write("record the use of passkey \(hexPrefix(id))") { (connection, keys) throws(CredentialStoreError) in
            self.updateIndex(connection, keys: &keys) { identities in
                guard let position = identities.firstIndex(where: { $0.credentialID == id }) else { return }
                identities[position].lastUsedDate = Date(milliseconds: date.milliseconds)
            }
        }
    }

    /// Applies `change` to the index, inside a write transaction after the rows changed. An index that cannot be
    /// read is first rebuilt from the rows (which already include this transaction's change).
    func updateIndex(
        _ connection: SQLiteConnection, keys: inout KeyCache, _ change: (inout [CredentialIdentity]) -> Void
    ) {
        var identities: [CredentialIdentity]
        if let index = try? CredentialIdentityIndex.read(at: indexURL.path) {
            identities = index.identities
        } else if let rebuilt = try? self.identities(connection, keys: &keys) {
            identities = rebuilt
        } else {
            IndexFiles.remove(indexURL.path)
            return
        }
        change(&identities)
        writeIndex(identities)
    }

    /// The index entry of a passkey as the row holds it, not yet used or ranked.
    static func identity(_ credential: StoredCredential) -> CredentialIdentity {
        CredentialIdentity(
            serviceIdentifier: credential.relyingPartyID,
            userName: credential.userName,
            userDisplayName: credential.userDisplayName,
            credentialID: credential.id,
            userHandle: credential.userHandle,
            isDiscoverable: credential.isDiscoverable,
            creationDate: credential.creationDate
        )
    }

    /// Every usable row as an index entry; damaged rows are left out (the index lists what can be used).
    private func identities(_ connection: SQLiteConnection, keys: inout KeyCache) throws(CredentialStoreError)
        -> [CredentialIdentity]
    {
        try sql("read the passkeys") { () throws(SQLiteFailure) in
            try connection.prepared(SQL.selectAll).query([], CredentialRecord.init)
        }.compactMap { record in
            guard case .intact(let credential) = entry(from: record, keys: &keys) else { return nil }
            return Self.identity(credential)
        }
    }

    private func writeIndex(_ identities: [CredentialIdentity]) {
        let path = indexURL.path
        do {
            try IndexFiles.replace(path, with: CredentialIdentityIndex(identities: identities).encoded())
        } catch {
            IndexFiles.remove(path)
        }
    }
}
