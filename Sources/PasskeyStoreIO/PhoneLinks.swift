import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO

/// What a phone (`passkey scan --link`, `passkey listen`) keeps so that linked computers can reach it again without
/// a QR code: its identity key (the NKpsk0 handshake's static key), its contact at each relay (the contact ID and the
/// listener secret whose verifier the relay holds), and one secret per linked computer.
///
/// It lives in a sealed file beside the store (``PhoneLinkFile``): AES-256-GCM under a key derived from the store
/// key, so every secret here is as safe as the passkeys' private keys and opens only with the passphrase.
public struct PhoneLinkState: Codable, Hashable, Sendable {
    /// The identity key's 32-byte P-256 scalar.
    public var identityKey: [UInt8]
    /// One contact per relay this phone registered with.
    public var contacts: [PhoneContact]
    /// One entry per computer that stored linking information from this phone.
    public var links: [PhoneLink]

    /// A fresh state: a new identity key, no contact, no link.
    public init(identityKey: [UInt8] = [UInt8](P256.KeyAgreement.PrivateKey().rawRepresentation)) {
        self.identityKey = identityKey
        contacts = []
        links = []
    }

    /// The identity key, or nil when the stored scalar is not one.
    public var identityPrivateKey: P256.KeyAgreement.PrivateKey? {
        try? P256.KeyAgreement.PrivateKey(rawRepresentation: identityKey)
    }

    /// The contact at `relay` (a `ws[s]://host[:port]` base URL as the user gave it).
    public func contact(at relay: String) -> PhoneContact? { contacts.first { $0.relay == relay } }

    /// The link with this link ID.
    public func link(id: [UInt8]) -> PhoneLink? { links.first { $0.linkID == id } }
}

/// A phone's registration with one relay.
public struct PhoneContact: Codable, Hashable, Sendable {
    /// The relay's base URL.
    public var relay: String
    /// The contact ID the relay gave (routing ID ‖ 29 random bytes).
    public var contactID: [UInt8]
    /// The 32-byte secret whose verifier the relay holds (``Hybrid.ContactOwnership``); never sent.
    public var listenerSecret: [UInt8]
    public var registered: Date

    public init(relay: String, contactID: [UInt8], listenerSecret: [UInt8], registered: Date) {
        self.relay = relay
        self.contactID = contactID
        self.listenerSecret = listenerSecret
        self.registered = registered
    }
}

/// One linked computer, as the phone knows it: the link ID and secret it gave that computer.
public struct PhoneLink: Codable, Hashable, Sendable {
    /// The 8-byte link ID (linking information key 2; the client payload's key 1).
    public var linkID: [UInt8]
    /// The 32-byte link secret (linking information key 3).
    public var secret: [UInt8]
    /// The relay of the contact it was given with.
    public var relay: String
    public var created: Date
    public var lastUsed: Date?

    public init(linkID: [UInt8], secret: [UInt8], relay: String, created: Date, lastUsed: Date? = nil) {
        self.linkID = linkID
        self.secret = secret
        self.relay = relay
        self.created = created
        self.lastUsed = lastUsed
    }
}

extension PhoneLink: CustomStringConvertible {
    /// The link ID and dates; never the secret.
    public var description: String { "PhoneLink(\(linkID.map { String(format: "%02x", $0) }.joined()))" }
}

/// The sealed file that holds a store's ``PhoneLinkState``: beside the store, named after it (`passkeys.sqlite` →
/// `passkeys.phone-links.sealed`), mode 0600, replaced atomically. Its bytes are `"PKPL" ‖ version 1 ‖
/// AES-GCM(nonce ‖ ciphertext ‖ tag)` of the state's JSON, under `HKDF-SHA256(store key, info "passkey phone
/// links v1")`, with the first five bytes as associated data. A wrong passphrase cannot open the store, so it never
/// reaches this file; a file that does not open (damaged, or another store's) is an error, never replaced silently.
public enum PhoneLinkFile {
    private static let magic: [UInt8] = Array("PKPL".utf8) + [1]

    private static func file(for store: SQLiteCredentialStore) -> SealedSideFile {
        SealedSideFile(
            url: PasskeyFiles(store: store.url).phoneLinks, magic: magic, keyring: store.keyring, use: .phoneLinks,
            what: "the phone links")
    }

    /// The state of `store`, or nil when it has none yet.
    public static func load(for store: SQLiteCredentialStore) throws(CredentialStoreError) -> PhoneLinkState? {
        let file = file(for: store)
        guard let opened = try file.open() else { return nil }
        guard let state = try? JSONDecoder().decode(PhoneLinkState.self, from: Data(opened)) else {
            throw file.notOpening
        }
        return state
    }

    /// Seals and writes `state` for `store`.
    public static func save(_ state: PhoneLinkState, for store: SQLiteCredentialStore) throws(CredentialStoreError) {
        guard let json = try? JSONEncoder().encode(state) else {
            throw CredentialStoreError(.io, "cannot seal the phone links")
        }
        try file(for: store).seal(json)
    }

    /// Removes the file (nothing linked any more).
    public static func remove(for store: SQLiteCredentialStore) {
        try? OwnerOnlyFile.remove(PasskeyFiles(store: store.url).phoneLinks)
    }
}
