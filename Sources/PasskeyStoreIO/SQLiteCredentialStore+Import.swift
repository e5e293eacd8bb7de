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
    /// `notes` gives the notes of some of them, by credential ID (a CXF `note` in a passkey's item): each is sealed
    /// and written in the same transaction, for the passkeys added only (a duplicate keeps its own note).
    public func importCredentials(
        _ credentials: [StoredCredential], notes: [[UInt8]: String] = [:]
    ) throws(CredentialStoreError) -> ImportOutcome {
        let action = "import \(credentials.count) passkeys"
        var rows: [(credential: StoredCredential, values: [SQLiteValue], note: [UInt8]?)] = []
        rows.reserveCapacity(credentials.count)
        for credential in credentials {
            try validate(credential, action: action)
            let values = Self.values(of: credential)
            var sealedNote: [UInt8]? = nil
            if let note = notes[credential.id] {
                guard note.utf8.count <= Self.maximumNoteLength else {
                    throw CredentialStoreError(
                        .io, "cannot \(action): a note must be at most \(Self.maximumNoteLength) bytes")
                }
                sealedNote = try keyring.seal(
                    Array(note.utf8), aad: Self.noteAAD(.passkey(credentialID: credential.id)), use: .rows)
            }
            rows.append((credential, values + [.blob(try seal(credential.privateKey, values: values))], sealedNote))
        }
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            var outcome = ImportOutcome(added: [], skippedDuplicates: [])
            var added: [StoredCredential] = []
            try sql(action) { () throws(SQLiteFailure) in
                let insert = try connection.prepared(SQL.insertUnlessPresent)
                let setNote = try connection.prepared(SQL.updateNote)
                for row in rows {
                    if try insert.run(row.values) > 0 {
                        outcome.added.append(row.credential.id)
                        added.append(row.credential)
                        if let note = row.note { try setNote.run([.blob(note), .blob(row.credential.id)]) }
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
