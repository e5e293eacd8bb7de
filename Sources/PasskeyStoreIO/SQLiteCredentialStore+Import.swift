import CTAP2

/// What `importCredentials` did: the credential IDs added and those skipped because the store already had them.
public struct ImportOutcome: Hashable, Sendable {
    public var added: [[UInt8]]
    public var skippedDuplicates: [[UInt8]]
}

extension SQLiteCredentialStore {
    /// Adds passkeys from another provider in one transaction: all of them or, after any failure, none.
    ///
    /// A credential ID the store already has (or that comes twice) is skipped and counted, never replaced; unlike
    /// `save`, an imported discoverable passkey does not replace one of the same relying party and user handle, so
    /// an import never deletes anything. Every credential is checked and sealed before the transaction starts.
    public func importCredentials(_ credentials: [StoredCredential]) throws(CredentialStoreError) -> ImportOutcome {
        let action = "import \(credentials.count) passkeys"
        var rows: [(credential: StoredCredential, values: [SQLiteValue])] = []
        rows.reserveCapacity(credentials.count)
        for credential in credentials {
            try validate(credential, action: action)
            let values = Self.values(of: credential)
            rows.append((credential, values + [.blob(try seal(credential.privateKey, values: values))]))
        }
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            var outcome = ImportOutcome(added: [], skippedDuplicates: [])
            var added: [StoredCredential] = []
            try sql(action) { () throws(SQLiteFailure) in
                let insert = try connection.prepared(SQL.insertUnlessPresent)
                for row in rows {
                    if try insert.run(row.values) > 0 {
                        outcome.added.append(row.credential.id)
                        added.append(row.credential)
                    } else {
                        outcome.skippedDuplicates.append(row.credential.id)
                    }
                }
            }
            updateIndex(connection, keys: &keys) { _ in added.map { .put(Self.identity($0)) } }
            return outcome
        }
    }
}
