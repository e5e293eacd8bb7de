import Basics
import CTAP2
import Foundation
import PasskeyStoreIO

/// What the store holds, for listing and deleting (`passkey list`, `passkey delete`, `passkey password list`).
///
/// Listing reads the identity index beside the store, which names the passkeys but holds no keys, so no passphrase is
/// needed. A missing or damaged index is rebuilt by unlocking the store only when the passphrase comes without asking
/// (`PASSKEY_PASSPHRASE`: a script expects `list` to work); a person is told how instead of being asked.
public struct PasskeyCatalog: Sendable {
    public let access: StoreAccess

    public init(access: StoreAccess) { self.access = access }

    /// The index, without the passphrase when it can be read.
    public func index() async throws(ProviderError) -> CredentialIdentityIndex {
        let url = access.url
        guard access.exists else { throw StoreAccess.noStore(at: url) }
        do {
            return try CredentialIdentityIndex.read(forStore: url)
        } catch {
            guard access.environment["PASSKEY_PASSPHRASE"] != nil else { throw Self.unusable(error) }
        }
        // Opening the store with its passphrase rebuilds the index.
        try await access.open(create: false).close()
        do {
            return try CredentialIdentityIndex.read(forStore: url)
        } catch {
            throw Self.unusable(error)
        }
    }

    static func unusable(_ error: CredentialIdentityIndexError) -> ProviderError {
        ProviderError(
            "the passkey index \(error.path) is missing or damaged (\(error.reason))",
            hint: "Unlock the store once to rebuild it, for example with `passkey list --verify`.")
    }

    /// What `passkey list` shows, read with at most one unlock.
    public struct Listing: Sendable {
        /// The store's own rows (with `verify`), damaged ones included; nil when the index was read instead.
        public var entries: [CredentialEntry]?
        /// The index's passkeys, when the rows were not read.
        public var identities: [CredentialIdentity]
        /// The notes of the passkeys listed (with `notes`), by credential ID.
        public var notes: [[UInt8]: StoredNote]
    }

    /// The passkeys of `relyingParty` (nil: all) that a signal hid (`hidden`) or that are shown (not `hidden`;
    /// damaged rows count as shown): from the index without the passphrase, or, with `verify` or `notes`, from one
    /// unlock of the store (the rows themselves with `verify`; the index, rebuilt by the unlock, with the notes).
    public func listing(
        relyingParty: String?, verify: Bool, notes withNotes: Bool, hidden: Bool
    ) async throws(ProviderError) -> Listing {
        let wanted = relyingParty
        func listed(_ identity: CredentialIdentity) -> Bool {
            (wanted == nil || identity.serviceIdentifier == wanted) && identity.isHidden == hidden
        }
        guard verify || withNotes else {
            return Listing(entries: nil, identities: try await index().passkeys.filter(listed), notes: [:])
        }
        let store = try await access.open(create: false)
        defer { store.close() }
        do {
            let notes = withNotes ? try store.notes() : [:]
            if verify {
                let entries = try store.entries().filter { entry in
                    switch entry {
                    case .intact(let credential):
                        (wanted == nil || credential.relyingPartyID == wanted)
                            && (credential.hiddenDate != nil) == hidden
                    case .damaged(let damaged): !hidden && (wanted == nil || damaged.relyingPartyID == wanted)
                    }
                }
                return Listing(entries: entries, identities: [], notes: notes)
            }
            return Listing(entries: nil, identities: try store.sealedIndex().passkeys.filter(listed), notes: notes)
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// Deletes the one passkey whose credential ID is one of `candidates` (the text read as base64url and as hex),
    /// damaged or not: the row alone decides. `text` is the ID as the person gave it, for messages. The person is
    /// shown which passkey it is and asked first (issue 24: `delete` did not confirm); `mode` may answer for them
    /// (`--yes`), and with nobody to ask and no `--yes` nothing is deleted. Returns what was deleted.
    public func delete(
        candidates: [[UInt8]], text: String, mode: ApprovalMode
    ) async throws(ProviderError) -> CredentialEntry {
        try await withPasskey(candidates: candidates, text: text) { store, id, entry in
            let question: ProviderQuestion =
                switch entry {
                case .intact(let credential):
                    .deletePasskey(
                        relyingPartyID: credential.relyingPartyID,
                        account: credential.userName ?? credential.userDisplayName ?? "an account with no name")
                case .damaged(let damaged):
                    .deletePasskey(relyingPartyID: nil, account: damaged.id.base64URLEncodedString)
                }
            switch await mode.answer(question, interface: access.interface, canAsk: access.canAsk) {
            case .unattended, .yes: break
            case .no: throw ProviderError("not deleted; nothing changed", exitStatus: ExitStatus.declined)
            case nil: throw PasswordVault.needsConfirmation
            }
            guard try store.deleteCredential(id: id) else {
                throw ProviderError("no passkey with credential ID \(text)")
            }
            return entry
        }
    }

    /// Opens the store, finds the one passkey whose credential ID is one of `candidates` (`text` as the person gave
    /// it), and runs `body` with the store, the ID and the row; a store failure becomes its message.
    func withPasskey<Result>(
        candidates: [[UInt8]], text: String,
        _ body: (SQLiteCredentialStore, [UInt8], CredentialEntry) async throws -> Result
    ) async throws(ProviderError) -> Result {
        let store = try await access.open(create: false)
        defer { store.close() }
        do {
            let (id, entry) = try CredentialLookup.one(candidates: candidates, text: text, notFoundHint: nil) {
                id throws(CredentialStoreError) in try store.entry(id: id).map { (id, $0) }
            }
            return try await body(store, id, entry)
        } catch let error as ProviderError {
            throw error
        } catch let error as CredentialStoreError {
            throw ProviderError(error.message)
        } catch {
            throw ProviderError("\(error)")
        }
    }

    /// Renames the one passkey whose credential ID is one of `candidates` (as ``delete(candidates:text:mode:)`` finds
    /// it): `name` and `displayName` replace the account's user name and display name, nil keeps one as it is
    /// (``AccountNames/checked(_:field:)`` decides what a name may be). The key is sealed again with the new names,
    /// as credential management's updateUserInformation does. Returns the passkey before and after.
    public func rename(
        candidates: [[UInt8]], text: String, name: String?, displayName: String?
    ) async throws(ProviderError) -> (before: StoredCredential, after: StoredCredential) {
        guard name != nil || displayName != nil else {
            throw ProviderError("nothing to rename", hint: "Give --name, --display-name or both.")
        }
        let name = try name.map { name throws(ProviderError) in try AccountNames.checked(name, field: "name") }
        let displayName = try displayName.map { name throws(ProviderError) in
            try AccountNames.checked(name, field: "display name")
        }
        return try await withPasskey(candidates: candidates, text: text) { store, id, entry in
            guard case .intact(let before) = entry else {
                throw ProviderError(
                    "the passkey \(text) is damaged, so it cannot be renamed",
                    hint: "Delete it (`passkey delete`) and register again.")
            }
            var after = before
            after.userName = name ?? before.userName
            after.userDisplayName = displayName ?? before.userDisplayName
            guard
                try store.updateUser(credentialID: id, userName: after.userName, userDisplayName: after.userDisplayName)
            else { throw ProviderError("no passkey with credential ID \(text)") }
            return (before, after)
        }
    }
}

/// What an account's user name or display name may be when a person sets it (`passkey rename`): not empty, at most
/// 64 bytes of UTF-8 (what makeCredential keeps, CTAP 2.1 §6.1.2), and no control or format characters (a name is
/// shown on terminals and in notifications).
public enum AccountNames {
    public static let maximumBytes = 64

    /// `text`, or why it cannot be a name; `field` names it in the error (`name`, `display name`).
    public static func checked(_ text: String, field: String) throws(ProviderError) -> String {
        guard !text.isEmpty else { throw ProviderError("the new \(field) is empty") }
        guard text.utf8.count <= maximumBytes else {
            throw ProviderError(
                "the new \(field) is \(text.utf8.count) bytes long; a passkey keeps at most \(maximumBytes)")
        }
        guard
            text.unicodeScalars.allSatisfy({
                $0.properties.generalCategory != .control && $0.properties.generalCategory != .format
            })
        else { throw ProviderError("the new \(field) holds a control or format character") }
        return text
    }
}
