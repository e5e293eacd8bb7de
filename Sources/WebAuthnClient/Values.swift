/// The WebAuthn enumerations the client acts on.
///
/// WebAuthn declares these members `DOMString`, not IDL enums, and tells clients to ignore values they do not know
/// (L3 §2.1.1 "Enumerations as DOMString types"): an unknown value reads as if the member were absent, so these are
/// closed enums and the parser drops what they cannot hold.

/// How an authenticator is attached (§5.4.5).
public enum AuthenticatorAttachment: String, Hashable, Sendable, CaseIterable {
    /// Built into this computer: here, this machine's passkey store.
    case platform
    /// Reached over a transport: a phone over hybrid, a security key over USB.
    case crossPlatform = "cross-platform"
}

/// How a client reaches an authenticator (§5.8.4).
public enum AuthenticatorTransport: String, Hashable, Sendable, CaseIterable, Comparable {
    case usb
    case nfc
    case ble
    case smartCard = "smart-card"
    case hybrid
    case `internal`

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Whether the relying party wants a discoverable credential (§5.4.6).
public enum ResidentKey: String, Hashable, Sendable, CaseIterable {
    case discouraged
    case preferred
    case required
}

/// Whether the relying party wants user verification (§5.8.6).
public enum UserVerification: String, Hashable, Sendable, CaseIterable {
    case required
    case preferred
    case discouraged
}

/// Which attestation the relying party wants (§5.4.7).
public enum AttestationConveyance: String, Hashable, Sendable, CaseIterable {
    case none
    case indirect
    case direct
    case enterprise
}

/// A user-agent hint (§5.8.8 `PublicKeyCredentialHint`), most preferred first in a request.
public enum PublicKeyCredentialHint: String, Hashable, Sendable, CaseIterable {
    /// A physical security key.
    case securityKey = "security-key"
    /// The platform authenticator of this computer.
    case clientDevice = "client-device"
    /// A phone or tablet over hybrid; also: do not promote the platform authenticator.
    case hybrid
}

/// How `get()` involves the user: `CredentialMediationRequirement` (Credential Management Level 1, "Mediation
/// Requirements"), and `immediate`, proposed as a fourth mediation value (w3c/webauthn#2228 and #2291,
/// w3c/webappsec-credential-management#272) and since written in Credential Management's editor's draft as
/// `uiMode: "immediate"` (`CredentialUiMode`, "UI Mode"). `silent` is left out: WebAuthn always mediates.
public enum CredentialMediation: String, Hashable, Sendable, CaseIterable {
    /// The default: the browser shows its UI; WebAuthn always mediates, so this is `required` in effect.
    case optional
    /// The user must take part.
    case required
    /// No modal UI: discoverable credentials offered in the page's autofill, without an error when there are none.
    case conditional
    /// Only credentials available at once on this device, else `NotAllowedError` without any UI.
    case immediate
}

/// One `PublicKeyCredentialParameters` (§5.3): a credential type and a COSE algorithm.
public struct PublicKeyCredentialParameters: Hashable, Sendable {
    public var type: String
    public var algorithm: Int

    public init(type: String = "public-key", algorithm: Int) {
        self.type = type
        self.algorithm = algorithm
    }
}

/// One `PublicKeyCredentialDescriptor` (§5.8.3): a credential the relying party knows, with the transports it
/// recorded. Transports this client does not know are dropped, as the specification says.
public struct PublicKeyCredentialDescriptor: Hashable, Sendable {
    public var type: String
    public var id: [UInt8]
    /// Empty when the relying party gave none: then any authenticator may hold the credential.
    public var transports: [AuthenticatorTransport]

    public init(type: String = "public-key", id: [UInt8], transports: [AuthenticatorTransport] = []) {
        self.type = type
        self.id = id
        self.transports = transports
    }
}

/// `AuthenticatorSelectionCriteria` (§5.4.4).
public struct AuthenticatorSelectionCriteria: Hashable, Sendable {
    /// Nil when absent or unknown: any attachment.
    public var attachment: AuthenticatorAttachment?
    /// Nil when absent or unknown: then `requireResidentKey` decides.
    public var residentKey: ResidentKey?
    public var requireResidentKey: Bool
    public var userVerification: UserVerification

    public init(
        attachment: AuthenticatorAttachment? = nil, residentKey: ResidentKey? = nil, requireResidentKey: Bool = false,
        userVerification: UserVerification = .preferred
    ) {
        self.attachment = attachment
        self.residentKey = residentKey
        self.requireResidentKey = requireResidentKey
        self.userVerification = userVerification
    }

    /// `residentKey`, else `required` when `requireResidentKey` is true and `discouraged` otherwise (§5.4.4).
    public var effectiveResidentKey: ResidentKey { residentKey ?? (requireResidentKey ? .required : .discouraged) }
}
