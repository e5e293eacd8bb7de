import CBOR
import CTAP2
import Foundation

/// Which of the three kinds of authenticator a browser offers this is. The kind fixes the attachment a response
/// reports and the hint that names it.
public enum AuthenticatorKind: String, Hashable, Sendable, CaseIterable {
    /// This computer's passkey store: attachment `platform`, transport `internal`.
    case platform
    /// A phone or tablet over hybrid, reached through a QR code.
    case hybrid
    /// A security key over CTAPHID (USB), NFC or BLE.
    case securityKey

    /// The attachment a response reports (WebAuthn L3 §5.1 `authenticatorAttachment`).
    public var attachment: AuthenticatorAttachment { self == .platform ? .platform : .crossPlatform }

    /// The hint that asks for this kind (§5.8.8).
    public var hint: PublicKeyCredentialHint {
        switch self {
        case .platform: .clientDevice
        case .hybrid: .hybrid
        case .securityKey: .securityKey
        }
    }
}

/// The ceremony a session is opened for; a hybrid phone is told which before the tunnel opens.
public enum ClientCeremony: String, Hashable, Sendable {
    case create
    case get
}

/// A credential an authenticator can list without asking the user (WebAuthn L3 §5.1.4.1
/// `DiscoverableCredentialMetadata`, from silentCredentialDiscovery, §6.3.5), with what a chooser shows. Never holds key
/// material.
public struct CredentialMetadata: Hashable, Sendable {
    public var credentialID: [UInt8]
    public var userHandle: [UInt8]?
    public var userName: String?
    public var userDisplayName: String?
    /// Whether a request without an allow list can find it; conditional UI lists only these.
    public var isDiscoverable: Bool
    public var created: Date?
    public var lastUsed: Date?

    public init(
        credentialID: [UInt8], userHandle: [UInt8]? = nil, userName: String? = nil, userDisplayName: String? = nil,
        isDiscoverable: Bool = true, created: Date? = nil, lastUsed: Date? = nil
    ) {
        self.credentialID = credentialID
        self.userHandle = userHandle
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.isDiscoverable = isDiscoverable
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// Why an authenticator could not be reached or stopped answering: the QR code, Bluetooth, tunnel or USB failed.
/// The description is for the user; it holds no secrets.
public struct AuthenticatorTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of end it was, for a caller that answers with a status (a phone behind a security key).
    public enum Kind: Hashable, Sendable {
        /// The authenticator could not be used or failed mid-request.
        case failed
        /// The waiting task was cancelled.
        case cancelled
        /// Nobody acted in time: no phone came near, no answer came.
        case timedOut
        /// A linked phone's relay said the link is gone (410, or 4410 on the tunnel): it was forgotten.
        case linkGone
    }

    public var description: String
    public var kind: Kind

    public init(_ description: String, kind: Kind = .failed) {
        self.description = description
        self.kind = kind
    }
}

/// An authenticator the engine can ask, by CTAP2 messages. The concrete ones (this machine's store, a phone over
/// hybrid, a security key over CTAPHID) are wired by the CLI; `InProcessAuthenticator` adapts this package's CTAP2
/// `Authenticator`.
///
/// `open` and a session's `send` must return promptly, throwing, when their task is cancelled: the engine cancels
/// the requests that lost a race and those whose timer ran out, and waits for them to end. A CTAPHID key sends
/// CTAPHID_CANCEL then; a phone closes its tunnel.
public protocol ClientAuthenticator: Sendable {
    var kind: AuthenticatorKind { get }
    /// How the platform reaches it: `internal` for the platform, `hybrid` for a phone, `usb` for a key.
    var transports: [AuthenticatorTransport] { get }

    /// The credentials it holds for `relyingPartyID`, listed without user verification or a prompt (from an identity
    /// index that needs no passphrase); nil when it cannot list them so (a phone, a security key).
    func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]?

    /// Opens a session: for a phone the QR code, proximity and tunnel; for a key the device. The session's getInfo
    /// comes with it.
    func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession
}

/// One open connection to an authenticator: CTAP2 messages (command byte and CBOR) in, responses (status byte and
/// CBOR) out.
public protocol AuthenticatorSession: Sendable {
    /// The authenticator's getInfo.
    var info: AuthenticatorInfo { get }
    /// How the PIN prompt names the device (a security key's hidraw node or address); nil names none.
    var name: String? { get }
    func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8]
    /// Ends the session; called once, whatever happened.
    func close() async
}

extension AuthenticatorSession {
    public var name: String? { nil }
}

/// This package's CTAP2 `Authenticator`, in process, as a `ClientAuthenticator`: the platform authenticator over the
/// passkey store, or any store in tests. Credentials are listed by `listing` (an identity index that needs no
/// passphrase), or straight from an unencrypted store. The authenticator may be made only when a session opens
/// (the store unlocked then), so that listing never needs the passphrase.
public struct InProcessAuthenticator: ClientAuthenticator {
    public let kind: AuthenticatorKind
    public let transports: [AuthenticatorTransport]
    private let opening: @Sendable () async throws(AuthenticatorTransportError) -> Authenticator
    private let listing: (@Sendable (String) async -> [CredentialMetadata]?)?

    /// Makes the authenticator with `opening` when a session opens (a failure there, such as a wrong passphrase,
    /// is the session's failure); `listing` lists an RP's credentials without asking the user (nil: it cannot).
    public init(
        kind: AuthenticatorKind = .platform, transports: [AuthenticatorTransport] = [.internal],
        listing: (@Sendable (String) async -> [CredentialMetadata]?)?,
        opening: @escaping @Sendable () async throws(AuthenticatorTransportError) -> Authenticator
    ) {
        self.kind = kind
        self.transports = transports
        self.listing = listing
        self.opening = opening
    }

    /// Wraps `authenticator`; `listing` lists an RP's credentials without asking the user (nil: it cannot).
    public init(
        _ authenticator: Authenticator, kind: AuthenticatorKind = .platform,
        transports: [AuthenticatorTransport] = [.internal],
        listing: (@Sendable (String) async -> [CredentialMetadata]?)?
    ) {
        self.init(kind: kind, transports: transports, listing: listing) { authenticator }
    }

    /// Wraps `authenticator` and lists credentials straight from `store` (an in-memory store, or one already open).
    public init(
        _ authenticator: Authenticator, store: any CredentialStore, kind: AuthenticatorKind = .platform,
        transports: [AuthenticatorTransport] = [.internal]
    ) {
        self.init(authenticator, kind: kind, transports: transports) { relyingPartyID in
            let stored = (try? await store.credentials(forRelyingParty: relyingPartyID)) ?? []
            return stored.filter { $0.hiddenDate == nil }.map { credential in
                CredentialMetadata(
                    credentialID: credential.id, userHandle: credential.userHandle, userName: credential.userName,
                    userDisplayName: credential.userDisplayName, isDiscoverable: credential.isDiscoverable,
                    created: credential.creationDate)
            }
        }
    }

    public func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? {
        await listing?(relyingPartyID) ?? nil
    }

    public func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession
    {
        let authenticator = try await opening()
        let info: AuthenticatorInfo
        do {
            info = try AuthenticatorInfo(cbor: try await authenticator.info())
        } catch {
            throw AuthenticatorTransportError("getInfo failed: \(error)")
        }
        return Session(authenticator: authenticator, info: info)
    }

    private struct Session: AuthenticatorSession {
        let authenticator: Authenticator
        let info: AuthenticatorInfo

        func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
            await authenticator.handle(message)
        }

        func close() async {}
    }
}
