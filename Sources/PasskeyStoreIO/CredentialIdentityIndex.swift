import Basics
import Foundation
import PasskeyFilesIO

/// One passkey as the credential identity index names it: which site, which account, which credential ID. Never a
/// key: nothing here can sign or unlock anything.
///
/// The index is a credential provider's view of the store, readable without the passphrase, as the identities an
/// operating system's credential provider API offers before it asks the provider to sign.
public struct CredentialIdentity: Hashable, Sendable {
    /// What the identity names: a passkey, or a saved password (Docs/Passwords.md).
    public enum Kind: String, Hashable, Sendable {
        case passkey
        case password
    }

    /// A passkey, or a saved password (whose `credentialID` is its row's random ID, with no user handle).
    public var kind: Kind
    /// The relying party ID the passkey belongs to, for example `example.com` (a URL is reduced to its host); for a
    /// password, its service identifier as saved (a domain, an `https://` origin or an app ID).
    public var serviceIdentifier: String
    /// The account name, for example `alice@example.com`.
    public var userName: String?
    /// The account's display name.
    public var userDisplayName: String?
    /// The credential ID the relying party stores.
    public var credentialID: [UInt8]
    /// The user handle chosen by the relying party.
    public var userHandle: [UInt8]
    /// Whether the passkey is discoverable (a resident key) or usable only through an allowList.
    public var isDiscoverable: Bool
    /// When the passkey was made, to the millisecond.
    public var creationDate: Date
    /// Higher ranks are listed first; 0 unless someone ranked the passkey.
    public var rank: Int
    /// When the authenticator last signed in with the passkey alone (to the millisecond); nil if never.
    public var lastUsedDate: Date?
    /// When a relying party's signal hid the passkey (to the millisecond); nil while it is shown. Hidden passkeys are
    /// left out of choosers and of `passkey list` (``CredentialIdentityIndex/shown``).
    public var hiddenDate: Date?

    public init(
        kind: Kind = .passkey,
        serviceIdentifier: String,
        userName: String? = nil,
        userDisplayName: String? = nil,
        credentialID: [UInt8],
        userHandle: [UInt8],
        isDiscoverable: Bool,
        creationDate: Date,
        rank: Int = 0,
        lastUsedDate: Date? = nil,
        hiddenDate: Date? = nil
    ) {
        self.kind = kind
        self.serviceIdentifier = kind == .passkey ? Self.serviceIdentifier(serviceIdentifier) : serviceIdentifier
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.credentialID = credentialID
        self.userHandle = userHandle
        self.isDiscoverable = isDiscoverable
        self.creationDate = Date(milliseconds: creationDate.milliseconds)
        self.rank = rank
        self.lastUsedDate = lastUsedDate.map { Date(milliseconds: $0.milliseconds) }
        self.hiddenDate = hiddenDate.map { Date(milliseconds: $0.milliseconds) }
    }

    /// Whether a signal hid the passkey.
    public var isHidden: Bool { hiddenDate != nil }

    /// The last use, else the creation: what "most recently used" sorts by.
    public var recentDate: Date { lastUsedDate ?? creationDate }

    /// The relying party ID itself, or the host when it was given as a URL (`https://example.com/` → `example.com`).
    static func serviceIdentifier(_ text: String) -> String {
        guard text.contains("://"), let host = URLComponents(string: text)?.host, !host.isEmpty else { return text }
        return host
    }

    /// The listing order: rank descending, then most recently used (last use, else creation) first; ties by
    /// relying party and credential ID, so the order never depends on the file's.
    static func listedBefore(_ a: CredentialIdentity, _ b: CredentialIdentity) -> Bool {
        if a.rank != b.rank { return a.rank > b.rank }
        if a.recentDate != b.recentDate { return a.recentDate > b.recentDate }
        if a.serviceIdentifier != b.serviceIdentifier { return a.serviceIdentifier < b.serviceIdentifier }
        if a.kind != b.kind { return a.kind == .passkey }
        return a.credentialID.lexicographicallyPrecedes(b.credentialID)
    }
}

/// Why the credential identity index could not be read. Either way it is rebuilt the next time the store is
/// unlocked (opened with its passphrase).
public struct CredentialIdentityIndexError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The broad reason, stable for callers to switch on.
    public enum Code: String, Hashable, Sendable {
        /// There is no index file.
        case missing
        /// The file is there but is not a valid index: not JSON, wrong types, too large, or unreadable.
        case damaged
    }

    /// The broad reason.
    public var code: Code
    /// The index file.
    public var path: String
    /// What was wrong, for a person; never key material (the index holds none).
    public var reason: String

    public init(_ code: Code, path: String, reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    /// What to do about it: any command that unlocks the store rebuilds the index.
    public static let remedy = "unlock the store once to rebuild it"

    public var description: String {
        "the passkey index \(path) is missing or damaged (\(reason)); \(Self.remedy)"
    }
}

/// The credential identity index: a small, non-secret JSON file beside the passkey store that lists every usable
/// passkey by name (relying party, account, credential ID, dates), so passkeys can be listed and chosen without
/// the passphrase.
///
/// The store keeps it up to date as passkeys are made, renamed, used and deleted, and rebuilds it from the store
/// whenever the store is unlocked; it can be deleted at any time. Reading needs no passphrase and no SQLite. See
/// Docs/Store.md, "The credential identity index".
public struct CredentialIdentityIndex: Hashable, Sendable {
    /// The largest index file `read` accepts.
    public static let maximumFileSize = 16 << 20
    /// How many changes the journal beside the index file holds before the store writes the file again.
    public static let maximumJournalEntries = 256

    /// Every usable passkey in the store when the index was written, in listing order (`CredentialIdentity`'s rank
    /// descending, then most recently used first).
    public var identities: [CredentialIdentity]

    public init(identities: [CredentialIdentity]) {
        self.identities = identities.sorted(by: CredentialIdentity.listedBefore)
    }

    /// The passkeys, without the saved passwords, in listing order.
    public var passkeys: [CredentialIdentity] { identities.filter { $0.kind == .passkey } }

    /// The saved passwords (logins, never the passwords themselves), in listing order.
    public var passwords: [CredentialIdentity] { identities.filter { $0.kind == .password } }

    /// The passkeys of one relying party (a URL is reduced to its host), in listing order.
    public func identities(forRelyingParty relyingPartyID: String) -> [CredentialIdentity] {
        let wanted = CredentialIdentity.serviceIdentifier(relyingPartyID)
        return identities.filter { $0.kind == .passkey && $0.serviceIdentifier == wanted }
    }

    /// The saved passwords whose service is the domain `relyingPartyID` or an `https://` origin on that host, in
    /// listing order: what a sign-in at that relying party offers beside its passkeys.
    public func passwords(forRelyingParty relyingPartyID: String) -> [CredentialIdentity] {
        let wanted = CredentialIdentity.serviceIdentifier(relyingPartyID).lowercased()
        return identities.filter { identity in
            identity.kind == .password && PasswordService(identity.serviceIdentifier)?.host == wanted
        }
    }

    /// The passkey with this credential ID, if the index lists it.
    public func identity(credentialID: [UInt8]) -> CredentialIdentity? {
        identities.first { $0.kind == .passkey && $0.credentialID == credentialID }
    }

    /// The identity of this kind with this ID, if the index lists it.
    public func identity(kind: CredentialIdentity.Kind, id: [UInt8]) -> CredentialIdentity? {
        identities.first { $0.kind == kind && $0.credentialID == id }
    }

    /// Reads the index of the store at `store`, without the passphrase.
    ///
    /// A missing file is `.missing`; anything that is not exactly an index (unreadable, larger than
    /// `maximumFileSize`, not JSON, a field missing or of the wrong type, an unknown format version) is `.damaged`.
    public static func read(forStore store: URL) throws(CredentialIdentityIndexError) -> CredentialIdentityIndex {
        let files = PasskeyFiles(store: store)
        return try read(index: files.identityIndex, journal: files.identityJournal)
    }

    /// Reads the index file at `index`, with the changes its journal at `journal` holds.
    static func read(index indexURL: URL, journal journalURL: URL) throws(CredentialIdentityIndexError)
        -> CredentialIdentityIndex
    {
        let path = indexURL.path
        let bytes: [UInt8]
        do {
            guard let read = try OwnerOnlyFile.read(indexURL, limit: maximumFileSize) else {
                throw CredentialIdentityIndexError(.missing, path: path, reason: "there is no such file")
            }
            bytes = read
        } catch let error as OwnerOnlyFileError {
            throw CredentialIdentityIndexError(.damaged, path: path, reason: error.reason)
        } catch let error as CredentialIdentityIndexError {
            throw error
        } catch {
            throw CredentialIdentityIndexError(.damaged, path: path, reason: "\(error)")
        }
        do {
            var index = try IndexDocument.decode(bytes)
            let journal = try IndexJournal.read(journalURL, limit: maximumFileSize)
            if !journal.isEmpty {
                var identities = index.identities
                IndexJournal.apply(journal, to: &identities)
                index = CredentialIdentityIndex(identities: identities)
            }
            return index
        } catch {
            throw CredentialIdentityIndexError(.damaged, path: path, reason: error.reason)
        }
    }

    /// The index as its file holds it: pretty-printed JSON with sorted keys, identities in listing order.
    func encoded() -> [UInt8] {
        IndexDocument.encode(self)
    }
}

extension Date {
    /// Whole milliseconds since 1970, as the store and the index keep dates.
    var milliseconds: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return 0 }
        return Int64(clamping: Int64(exactly: value.clamped(to: -9e15...9e15)) ?? 0)
    }

    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Double {
    fileprivate func clamped(to range: ClosedRange<Double>) -> Double {
        Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}
