import CTAP2
import Foundation

/// Passkeys a relying party's signal hid (WebAuthn L3 signalUnknownCredential, signalAllAcceptedCredentials): kept
/// with the time they were hidden, left out of choosers and `passkey list`, shown again by `passkey unhide` or a later
/// signal, and deleted once ``hiddenGracePeriod`` has passed. See Docs/Store.md, "Hidden passkeys".
extension SQLiteCredentialStore {
    /// How long a hidden passkey is kept before it is deleted: thirty days, as long as Apple's Passwords app keeps a
    /// deleted passkey under "Recently Deleted", so that a signal sent in error (a relying party that lost its
    /// database, a page that signalled the wrong user) can be undone by the person for as long as they would expect.
    public static let hiddenGracePeriod: TimeInterval = 30 * 24 * 60 * 60

    /// Hides (with a date) or shows again (nil) each passkey of `credentialIDs` that is not already so, sealing its
    /// key again since the seal covers the column. IDs the store does not hold are passed over. Returns the passkeys
    /// changed, as they now are. A damaged row fails with `.corrupt` and nothing is changed.
    @discardableResult
    public func setHidden(_ date: Date?, credentialIDs: [[UInt8]]) throws(CredentialStoreError) -> [StoredCredential] {
        let action = date == nil ? "show hidden passkeys again" : "hide passkeys"
        if let date {
            let seconds = date.timeIntervalSince1970
            guard seconds.isFinite, abs(seconds) < 9e12 else {
                throw CredentialStoreError(.io, "cannot \(action): the date is out of range")
            }
        }
        return try write(action) { (connection, keys) throws(CredentialStoreError) -> [StoredCredential] in
            var changed: [StoredCredential] = []
            for id in Set(credentialIDs) {
                let records = try sql(action) { () throws(SQLiteFailure) in
                    try connection.prepared(SQL.selectByID).query([.blob(id)], CredentialRecord.init)
                }
                guard let record = records.first else { continue }
                guard case .intact(var credential) = try entry(from: record, keys: &keys) else {
                    throw CredentialStoreError(
                        .corrupt,
                        "cannot \(action): passkey \(hexPrefix(id)) fails its integrity check (delete it instead)")
                }
                guard (credential.hiddenDate == nil) != (date == nil) else { continue }
                credential.hiddenDate = date.map { Date(milliseconds: $0.milliseconds) }
                let values = Self.values(of: credential)
                let sealed = try seal(credential.privateKey, values: values)
                keys.remove(id)
                try sql(action) { () throws(SQLiteFailure) in
                    _ = try connection.prepared(SQL.updateHidden).run([
                        values[CredentialColumn.hidden.rawValue], .blob(sealed), .blob(id),
                    ])
                }
                changed.append(credential)
            }
            let hiddenDates = Dictionary(changed.map { ($0.id, $0.hiddenDate) }, uniquingKeysWith: { a, _ in a })
            updateIndex(connection, keys: &keys) { identities in
                identities.filter { $0.kind == .passkey && hiddenDates[$0.credentialID] != nil }.map { identity in
                    var updated = identity
                    updated.hiddenDate = hiddenDates[identity.credentialID] ?? nil
                    return .put(updated)
                }
            }
            return changed
        }
    }

    /// Deletes the passkeys hidden for longer than ``hiddenGracePeriod`` at `now`, from their rows alone; returns
    /// their credential IDs. Costs one read when there are none, so opening a store can run it every time.
    @discardableResult
    public func deleteExpiredHidden(now: Date = Date()) throws(CredentialStoreError) -> [[UInt8]] {
        let action = "delete passkeys hidden for longer than their grace period"
        let cutoff = SQLiteValue.integer(now.addingTimeInterval(-Self.hiddenGracePeriod).milliseconds)
        let expired = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.countHiddenBefore).query([cutoff]) { $0.integer(0) }.first ?? 0
            }
        }
        guard (expired ?? 0) > 0 else { return [] }
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            let deleted = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deleteHiddenBefore).query([cutoff]) { $0.blob(0) }.compactMap { $0 }
            }
            for id in deleted { keys.remove(id) }
            updateIndex(connection, keys: &keys) { _ in deleted.map { .remove($0) } }
            return deleted
        }
    }
}
