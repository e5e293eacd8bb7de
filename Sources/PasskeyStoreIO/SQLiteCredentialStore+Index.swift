import CTAP2
import Foundation
import PasskeyFilesIO
import Synchronization

/// Keeping the credential identity index (`CredentialIdentityIndex`) beside the store up to date.
///
/// Every change runs inside the store's own write transaction, so SQLite's write lock orders the index updates of
/// every process using the store, and each update reads the file as the last writer left it. The index is a
/// convenience: a failure to write it never fails the store operation; the file is removed instead (then it reads as
/// missing) and is rebuilt on the next write or unlock.
extension SQLiteCredentialStore {
    /// The index file of this store (`PasskeyFiles.identityIndex`).
    public var indexURL: URL { PasskeyFiles(store: url).identityIndex }

    /// The journal of changes beside the index file (`IndexJournal`, `PasskeyFiles.identityJournal`).
    var journalURL: URL { PasskeyFiles(store: url).identityJournal }
    var journalPath: String { journalURL.path }

    /// Writes the index again from the store's usable rows, keeping the ranks and last-use times of the index
    /// there was, if it can be read, and empties the journal. Opening the store does this.
    public func rebuildIndex() throws(CredentialStoreError) {
        let previous = try? CredentialIdentityIndex.read(index: indexURL, journal: journalURL)
        try write("rebuild the passkey index") { (connection, keys) throws(CredentialStoreError) in
            var identities = try self.identities(connection, keys: &keys)
            if let previous {
                for position in identities.indices where identities[position].kind == .passkey {
                    guard let old = previous.identity(credentialID: identities[position].credentialID) else { continue }
                    identities[position].rank = old.rank
                    identities[position].lastUsedDate = old.lastUsedDate
                }
            }
            self.writeIndex(identities)
        }
    }

    /// How close together two uses of a passkey may be for the second to go unrecorded: a sign-in costs a write
    /// transaction and a journal line only when the last use this store recorded is older.
    public static let useRecordingInterval: TimeInterval = 60

    /// Records that the authenticator signed in with this passkey: its last-use time in the index, to within
    /// ``useRecordingInterval``. Best effort: nothing the platform sees depends on it.
    public func recordUse(ofCredential id: [UInt8], at date: Date) {
        func isRecent(_ last: Date?) -> Bool {
            guard let last else { return false }
            return last <= date && date.timeIntervalSince(last) < Self.useRecordingInterval
        }
        // The hot path: the index as this store last wrote it (which includes what other processes had recorded
        // until then) knows a recent use, and a sign-in again and again costs one hash lookup.
        if isRecent(indexCache.withLock({ $0?.lastPasskeyUse[id] })) { return }
        try? write("record the use of passkey \(hexPrefix(id))") { (connection, keys) throws(CredentialStoreError) in
            self.updateIndex(connection, keys: &keys) { identities in
                guard var identity = identities.first(where: { $0.kind == .passkey && $0.credentialID == id }) else {
                    return []
                }
                identity.lastUsedDate = Date(milliseconds: date.milliseconds)
                return [.put(identity)]
            }
        }
    }

    /// Folds the journal into the index file, when there is one: closing the store does this, so that an index
    /// left behind is one file.
    func compactIndex() {
        guard FileManager.default.fileExists(atPath: journalPath) else { return }
        try? write("write the passkey index") { (connection, keys) throws(CredentialStoreError) in
            guard let identities = self.currentIdentities(connection, keys: &keys)?.identities else {
                self.removeIndex()
                return
            }
            self.writeIndex(identities)
        }
    }

    /// Applies the changes `change` gives for the current identities, inside a write transaction after the rows
    /// changed: appended to the journal, or, once the journal is long, written out as a new index file. An index
    /// that cannot be read is first rebuilt from the rows (which already include this transaction's change).
    func updateIndex(
        _ connection: SQLiteConnection, keys: inout KeyCache,
        _ change: ([CredentialIdentity]) -> [IndexJournal.Entry]
    ) {
        guard let (current, journalLength, fromRows) = currentIdentities(connection, keys: &keys) else {
            removeIndex()
            return
        }
        var identities = current
        let entries = change(identities)
        IndexJournal.apply(entries, to: &identities)
        if fromRows || journalLength + entries.count > IndexJournal.maximumEntries {
            writeIndex(identities)
            return
        }
        guard !entries.isEmpty else { return }
        do {
            try IndexJournal.append(entries, to: journalURL)
            let stamps = (IndexFiles.stamp(indexURL.path), IndexFiles.stamp(journalPath))
            indexCache.withLock { cache in
                cache = stamps.0.map {
                    IndexCache(
                        identities: identities, indexStamp: $0, journalStamp: stamps.1,
                        journalLength: journalLength + entries.count)
                }
            }
        } catch {
            removeIndex()
        }
    }

    /// The identities as the index and its journal hold them, and the journal's length: from what this store last
    /// wrote while neither file changed since, else read from the files, else (`fromRows`) from the rows, with the
    /// ranks and last uses lost. Nil when none of these works.
    private func currentIdentities(_ connection: SQLiteConnection, keys: inout KeyCache) -> (
        identities: [CredentialIdentity], journalLength: Int, fromRows: Bool
    )? {
        let indexStamp = IndexFiles.stamp(indexURL.path)
        let journalStamp = IndexFiles.stamp(journalPath)
        if let cached = indexCache.withLock({ $0 }), indexStamp != nil, cached.indexStamp == indexStamp,
            cached.journalStamp == journalStamp
        {
            return (cached.identities, cached.journalLength, false)
        }
        if let index = try? CredentialIdentityIndex.read(index: indexURL, journal: journalURL),
            let journal = try? IndexJournal.read(journalURL, limit: CredentialIdentityIndex.maximumFileSize)
        {
            return (index.identities, journal.count, false)
        }
        guard let rows = try? identities(connection, keys: &keys) else { return nil }
        return (rows, 0, true)
    }

    /// Removes the index and its journal, to be rebuilt on the next unlock.
    func removeIndex() {
        indexCache.withLock { $0 = nil }
        try? OwnerOnlyFile.remove(indexURL)
        try? OwnerOnlyFile.remove(journalURL)
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
            creationDate: credential.creationDate,
            hiddenDate: credential.hiddenDate
        )
    }

    /// The index as the sealed rows give it, not as the file beside the store says: every usable passkey and saved
    /// login with the names, rank and dates its row holds (rows the store key authenticates). What a chooser shown
    /// while the store is unlocked lists, so that whoever can write the index file cannot rename or swap accounts
    /// there; a credential the file names but the store does not have is not in it.
    public func sealedIndex() throws(CredentialStoreError) -> CredentialIdentityIndex {
        try read("read the passkeys") { (connection, keys) throws(CredentialStoreError) in
            CredentialIdentityIndex(identities: try identities(connection, keys: &keys))
        }
    }

    /// Every usable row, passkeys and saved passwords, as an index entry; damaged rows are left out (the index lists
    /// what can be used).
    private func identities(_ connection: SQLiteConnection, keys: inout KeyCache) throws(CredentialStoreError)
        -> [CredentialIdentity]
    {
        var passkeys: [CredentialIdentity] = []
        for record in try sql(
            "read the passkeys",
            { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectAll).query([], CredentialRecord.init)
            })
        {
            guard case .intact(let credential) = try entry(from: record, keys: &keys) else { continue }
            passkeys.append(Self.identity(credential))
        }
        return passkeys + (try passwordIdentities(connection))
    }

    /// Writes `identities` as the index file and removes the journal, whose changes it holds. The file is replaced
    /// before the journal goes, and replaying a journal is harmless, so a reader never misses a change.
    private func writeIndex(_ identities: [CredentialIdentity]) {
        let path = indexURL.path
        let index = CredentialIdentityIndex(identities: identities)
        do {
            try OwnerOnlyFile.write(index.encoded(), to: indexURL)
            try? OwnerOnlyFile.remove(journalURL)
            let stamp = IndexFiles.stamp(path)
            indexCache.withLock { cache in
                cache = stamp.map {
                    IndexCache(identities: index.identities, indexStamp: $0, journalStamp: nil, journalLength: 0)
                }
            }
        } catch {
            removeIndex()
        }
    }
}

/// The index as a store last wrote it, and the stamps of the index file and journal then: while both keep their
/// stamps, no other process changed them, and updates start from these identities instead of reading the files.
struct IndexCache {
    let identities: [CredentialIdentity]
    let indexStamp: IndexFiles.Stamp
    let journalStamp: IndexFiles.Stamp?
    let journalLength: Int
    /// Each passkey's last recorded use by credential ID: ``SQLiteCredentialStore/recordUse(ofCredential:at:)`` looks
    /// here on every sign-in.
    let lastPasskeyUse: [[UInt8]: Date]

    init(
        identities: [CredentialIdentity], indexStamp: IndexFiles.Stamp, journalStamp: IndexFiles.Stamp?,
        journalLength: Int
    ) {
        self.identities = identities
        self.indexStamp = indexStamp
        self.journalStamp = journalStamp
        self.journalLength = journalLength
        var uses: [[UInt8]: Date] = [:]
        for identity in identities where identity.kind == .passkey {
            if let used = identity.lastUsedDate { uses[identity.credentialID] = used }
        }
        lastPasskeyUse = uses
    }
}
