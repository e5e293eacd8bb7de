import CTAP2

/// A passkey row the store will not use: a required column is missing, or the row fails its integrity check (its
/// sealed private key does not open with the row's own columns as associated data, so the key or any of the
/// columns was changed outside this program, or the file was damaged).
///
/// Everything here is read from the row without authentication, so it only helps a person find and delete the row.
public struct DamagedCredential: Hashable, Sendable, CustomStringConvertible {
    /// Why the row is unusable.
    public enum Reason: Hashable, Sendable {
        /// The sealed key does not open with this row's columns: changed or damaged.
        case failsIntegrityCheck
        /// A column the store needs is missing or has the wrong type.
        case missingFields
    }

    /// The credential ID as the row holds it (possibly empty when that column is what is damaged).
    public var id: [UInt8]
    /// The relying party ID as the row claims it.
    public var relyingPartyID: String?
    /// The account name as the row claims it.
    public var userName: String?
    /// Why the row is unusable.
    public var reason: Reason

    public init(id: [UInt8], relyingPartyID: String?, userName: String?, reason: Reason) {
        self.id = id
        self.relyingPartyID = relyingPartyID
        self.userName = userName
        self.reason = reason
    }

    /// One sentence naming the credential by its first bytes and the reason; never key material.
    public var description: String {
        let what =
            switch reason {
            case .failsIntegrityCheck: "fails its integrity check: the store was damaged or tampered with"
            case .missingFields: "is missing required fields"
            }
        return "passkey \(hexPrefix(id)) \(what)"
    }
}

/// One row of the credentials table: a usable passkey, or a damaged row that can still be listed and deleted.
public enum CredentialEntry: Sendable {
    /// The row passed every check.
    case intact(StoredCredential)
    /// The row cannot be used; see `DamagedCredential`.
    case damaged(DamagedCredential)

    /// The credential ID of the row.
    public var id: [UInt8] {
        switch self {
        case .intact(let credential): credential.id
        case .damaged(let damaged): damaged.id
        }
    }

    /// The relying party ID (claimed, for a damaged row).
    public var relyingPartyID: String? {
        switch self {
        case .intact(let credential): credential.relyingPartyID
        case .damaged(let damaged): damaged.relyingPartyID
        }
    }
}
