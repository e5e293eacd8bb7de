import Crypto
import Foundation
import Synchronization
import WebAuthn

/// The credProtect level of a credential (CTAP 2.1 §12.1): when it may be used without user verification.
public enum CredentialProtection: Int, Hashable, Sendable, CaseIterable {
    /// userVerificationOptional: always usable (the default).
    case userVerificationOptional = 1
    /// userVerificationOptionalWithCredentialIDList: without UV only when the platform names it in an allowList.
    case userVerificationOptionalWithCredentialIDList = 2
    /// userVerificationRequired: only with user verification.
    case userVerificationRequired = 3
}

/// One passkey as the authenticator keeps it.
///
/// The private key is here in the clear: stores that persist credentials encrypt it at rest.
/// `backupEligible` is fixed when the credential is made and never changes afterwards.
public struct StoredCredential: Sendable {
    /// The credential ID the relying party stores (random, 16 bytes or longer).
    public var id: [UInt8]
    /// The relying party identifier, for example `example.com`.
    public var relyingPartyID: String
    /// The relying party's human-palatable name, when the request carried one.
    public var relyingPartyName: String?
    /// The user handle chosen by the relying party (at most 64 bytes).
    public var userHandle: [UInt8]
    /// The account name, for example `alice@example.com`.
    public var userName: String?
    /// The account's display name.
    public var userDisplayName: String?
    /// The credential's signing key, with the algorithm it was made for.
    public var privateKey: CredentialPrivateKey
    /// Whether the credential is discoverable (a resident key) or usable only through an allowList.
    public var isDiscoverable: Bool
    /// The BE flag: set at creation, never changed.
    public var backupEligible: Bool
    /// The BS flag; only ever true when `backupEligible` is.
    public var backupState: Bool
    /// When the credential was made; orders discoverable credentials newest first.
    public var creationDate: Date
    /// The credProtect level chosen at creation.
    public var credentialProtection: CredentialProtection
    /// The credBlob stored at creation (at most 32 bytes), returned on request by getAssertion.
    public var credentialBlob: [UInt8]?
    /// Whether the credential was made with hmac-secret; its secrets are derived from the private key.
    public var hmacSecret: Bool
    /// Whether the credential was made with largeBlobKey; the key is derived from the private key.
    public var largeBlobKey: Bool
    /// Whether the relying party made it for third-party payments (CTAP 2.2 thirdPartyPayment, for Secure Payment
    /// Confirmation); getAssertion reports it when asked.
    public var thirdPartyPayment: Bool
    /// When a relying party's signal hid the passkey (WebAuthn L3 signalUnknownCredential or
    /// signalAllAcceptedCredentials); nil while it is shown. A hidden passkey is kept, so that a person can bring it
    /// back, but no chooser offers it: a request with an empty allowList does not find it.
    public var hiddenDate: Date?

    public init(
        id: [UInt8],
        relyingPartyID: String,
        relyingPartyName: String? = nil,
        userHandle: [UInt8],
        userName: String? = nil,
        userDisplayName: String? = nil,
        privateKey: CredentialPrivateKey,
        isDiscoverable: Bool,
        backupEligible: Bool,
        backupState: Bool,
        creationDate: Date,
        credentialProtection: CredentialProtection = .userVerificationOptional,
        credentialBlob: [UInt8]? = nil,
        hmacSecret: Bool = false,
        largeBlobKey: Bool = false,
        thirdPartyPayment: Bool = false,
        hiddenDate: Date? = nil
    ) {
        self.id = id
        self.relyingPartyID = relyingPartyID
        self.relyingPartyName = relyingPartyName
        self.userHandle = userHandle
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.privateKey = privateKey
        self.isDiscoverable = isDiscoverable
        self.backupEligible = backupEligible
        self.backupState = backupState && backupEligible
        self.creationDate = creationDate
        self.credentialProtection = credentialProtection
        self.credentialBlob = credentialBlob
        self.hmacSecret = hmacSecret
        self.largeBlobKey = largeBlobKey
        self.thirdPartyPayment = thirdPartyPayment
        self.hiddenDate = hiddenDate
    }

    /// A credential with an ES256 key.
    public init(
        id: [UInt8], relyingPartyID: String, relyingPartyName: String? = nil, userHandle: [UInt8],
        userName: String? = nil, userDisplayName: String? = nil, privateKey: P256.Signing.PrivateKey,
        isDiscoverable: Bool, backupEligible: Bool, backupState: Bool, creationDate: Date,
        credentialProtection: CredentialProtection = .userVerificationOptional, credentialBlob: [UInt8]? = nil,
        hmacSecret: Bool = false, largeBlobKey: Bool = false
    ) {
        self.init(
            id: id, relyingPartyID: relyingPartyID, relyingPartyName: relyingPartyName, userHandle: userHandle,
            userName: userName, userDisplayName: userDisplayName, privateKey: .p256(privateKey, algorithm: .es256),
            isDiscoverable: isDiscoverable, backupEligible: backupEligible, backupState: backupState,
            creationDate: creationDate, credentialProtection: credentialProtection, credentialBlob: credentialBlob,
            hmacSecret: hmacSecret, largeBlobKey: largeBlobKey)
    }
}

/// Why a credential store could not do what was asked. The store is unchanged after any of these.
public struct CredentialStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The broad reason, stable for callers to switch on.
    public enum Code: String, Hashable, Sendable {
        /// The passphrase does not open this store.
        case wrongPassphrase
        /// The file is not a passkey store, or is damaged or truncated.
        case corrupt
        /// The file was written by a newer version of this program.
        case newerSchema
        /// The store holds as many credentials as it may.
        case full
        /// The file system refused (permissions, missing directory, disk full).
        case io
        /// The store is in use by another process.
        case busy
    }

    /// The broad reason.
    public var code: Code
    /// A sentence for the user; never contains key material or passphrases.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Where the authenticator keeps its passkeys. Implementations must be safe to call concurrently
/// and must make each write atomic: after a failure nothing has changed.
public protocol CredentialStore: Sendable {
    /// All credentials of one relying party, newest first.
    func credentials(forRelyingParty relyingPartyID: String) async throws(CredentialStoreError)
        -> [StoredCredential]
    /// Every credential in the store, grouped by relying party and newest first within each.
    func allCredentials() async throws(CredentialStoreError) -> [StoredCredential]
    /// The credential with this ID, whatever its relying party.
    func credential(id: [UInt8]) async throws(CredentialStoreError) -> StoredCredential?
    /// Adds a credential. A discoverable credential replaces any discoverable credential of the
    /// same relying party and user handle (CTAP 2.1 §6.1.2 step 17).
    func save(_ credential: StoredCredential) async throws(CredentialStoreError)
    /// Deletes one credential; returns whether it existed.
    func deleteCredential(id: [UInt8]) async throws(CredentialStoreError) -> Bool
    /// Replaces the account name and display name of one credential (nil removes them); returns whether it
    /// existed.
    func updateUser(credentialID: [UInt8], userName: String?, userDisplayName: String?)
        async throws(CredentialStoreError) -> Bool
    /// authenticatorReset: deletes every credential and puts the authenticator settings (PIN, retry counters,
    /// alwaysUv, minimum PIN length) back to their defaults, in one step.
    func deleteAll() async throws(CredentialStoreError)
    /// The PIN state and the authenticatorConfig settings; the defaults when nothing was ever saved.
    func settings() async throws(CredentialStoreError) -> AuthenticatorSettings
    /// Replaces the settings in one step.
    func saveSettings(_ settings: AuthenticatorSettings) async throws(CredentialStoreError)
    /// The serialized large-blob array (CTAP 2.1 §6.10); nil when none was ever written (the initial, empty one).
    func largeBlobArray() async throws(CredentialStoreError) -> [UInt8]?
    /// Replaces the serialized large-blob array in one step.
    func saveLargeBlobArray(_ array: [UInt8]) async throws(CredentialStoreError)
    /// Notes that the authenticator has just signed in with this credential (getAssertion answered with it alone).
    /// Best effort, never fails the request: a store may keep a last-use time for listing; the default does nothing.
    func recordUse(ofCredential id: [UInt8], at date: Date) async
}

extension CredentialStore {
    public func recordUse(ofCredential id: [UInt8], at date: Date) async {}
}

/// A store that lives only as long as the process: for tests, benchmarks and `--ephemeral`.
///
/// Indexed by credential ID, so lookups and saves cost the same with ten passkeys or ten thousand.
public final class InMemoryCredentialStore: CredentialStore {
    private struct Entry {
        var credential: StoredCredential
        /// Insertion order; higher is newer, which breaks ties between equal creation dates.
        var sequence: Int
    }

    private struct DiscoverableKey: Hashable {
        var relyingPartyID: String
        var userHandle: [UInt8]

        init(_ credential: StoredCredential) {
            relyingPartyID = credential.relyingPartyID
            userHandle = credential.userHandle
        }
    }

    private struct State {
        var byID: [[UInt8]: Entry] = [:]
        var discoverable: [DiscoverableKey: [UInt8]] = [:]
        var nextSequence = 0
        var settings = AuthenticatorSettings()
        var largeBlobArray: [UInt8]?
    }

    private let state: Mutex<State>
    /// The largest number of credentials kept; `save` beyond it fails with `.full`.
    public let capacity: Int

    public init(
        capacity: Int = 100_000, credentials: [StoredCredential] = [],
        settings: AuthenticatorSettings = AuthenticatorSettings()
    ) {
        self.capacity = capacity
        var initial = State(settings: settings)
        for credential in credentials { Self.insert(credential, into: &initial) }
        state = Mutex(initial)
    }

    public func credentials(forRelyingParty relyingPartyID: String) throws(CredentialStoreError) -> [StoredCredential] {
        Self.newestFirst(state.withLock { $0.byID.values.filter { $0.credential.relyingPartyID == relyingPartyID } })
    }

    public func allCredentials() throws(CredentialStoreError) -> [StoredCredential] {
        let entries = state.withLock { Array($0.byID.values) }
        return Dictionary(grouping: entries, by: \.credential.relyingPartyID).sorted { $0.key < $1.key }
            .flatMap { Self.newestFirst($0.value) }
    }

    public func credential(id: [UInt8]) throws(CredentialStoreError) -> StoredCredential? {
        state.withLock { $0.byID[id]?.credential }
    }

    public func save(_ credential: StoredCredential) throws(CredentialStoreError) {
        try state.withLock { state throws(CredentialStoreError) in
            let replaced = credential.isDiscoverable ? state.discoverable[DiscoverableKey(credential)] : nil
            guard state.byID[credential.id] == nil || replaced == credential.id else {
                throw CredentialStoreError(.io, "a credential with this ID already exists")
            }
            guard state.byID.count - (replaced == nil ? 0 : 1) < capacity else {
                throw CredentialStoreError(.full, "the credential store is full")
            }
            if let replaced { state.byID[replaced] = nil }
            Self.insert(credential, into: &state)
        }
    }

    public func deleteCredential(id: [UInt8]) throws(CredentialStoreError) -> Bool {
        state.withLock { state in
            guard let removed = state.byID.removeValue(forKey: id) else { return false }
            if removed.credential.isDiscoverable { state.discoverable[DiscoverableKey(removed.credential)] = nil }
            return true
        }
    }

    public func updateUser(credentialID: [UInt8], userName: String?, userDisplayName: String?)
        throws(CredentialStoreError) -> Bool
    {
        state.withLock { state in
            guard state.byID[credentialID] != nil else { return false }
            state.byID[credentialID]?.credential.userName = userName
            state.byID[credentialID]?.credential.userDisplayName = userDisplayName
            return true
        }
    }

    public func deleteAll() throws(CredentialStoreError) {
        state.withLock { $0 = State() }
    }

    public func settings() throws(CredentialStoreError) -> AuthenticatorSettings {
        state.withLock { $0.settings }
    }

    public func saveSettings(_ settings: AuthenticatorSettings) throws(CredentialStoreError) {
        state.withLock { $0.settings = settings }
    }

    public func largeBlobArray() throws(CredentialStoreError) -> [UInt8]? {
        state.withLock { $0.largeBlobArray }
    }

    public func saveLargeBlobArray(_ array: [UInt8]) throws(CredentialStoreError) {
        state.withLock { $0.largeBlobArray = array }
    }

    private static func insert(_ credential: StoredCredential, into state: inout State) {
        state.byID[credential.id] = Entry(credential: credential, sequence: state.nextSequence)
        state.nextSequence += 1
        if credential.isDiscoverable { state.discoverable[DiscoverableKey(credential)] = credential.id }
    }

    private static func newestFirst(_ entries: [Entry]) -> [StoredCredential] {
        entries.sorted {
            ($0.credential.creationDate, $0.sequence) > ($1.credential.creationDate, $1.sequence)
        }.map(\.credential)
    }
}
