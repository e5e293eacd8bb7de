import CTAP2
import CTAPHID
import Hybrid

/// Whether `passkey serve` offers a phone behind the virtual key (issue 25; Docs/Plans/PhoneBridge.md).
public enum PhoneBridgeMode: Hashable, Sendable {
    /// No phone: the store answers every request, as a key without the bridge does.
    case off
    /// The store first; a phone for a sign-in the store cannot answer, and for a creation when the person picks one.
    case phoneFallback
    /// Every ceremony goes to a phone; what only the store could answer is refused.
    case phoneOnly
}

/// What the route decision reads of one CTAP request: its shape only, never a value from its payload.
public struct PhoneRouteFacts: Hashable, Sendable {
    public var command: CTAPCommand
    /// The request's `up` option as sent; nil when the request does not say (which means true).
    public var userPresence: Bool?
    /// Whether the request carries a pinUvAuthParam: it is bound to this key's token, which a phone cannot check.
    public var hasPinUvAuthParam: Bool
    /// getAssertion: whether the store holds a credential this request can use (its allow list, or a discoverable
    /// one for the RP ID when the list is empty).
    public var storeCanAnswer: Bool
    /// makeCredential: whether the store holds a credential of the request's exclude list.
    public var storeExcludes: Bool

    public init(
        command: CTAPCommand, userPresence: Bool? = nil, hasPinUvAuthParam: Bool = false, storeCanAnswer: Bool = false,
        storeExcludes: Bool = false
    ) {
        self.command = command
        self.userPresence = userPresence
        self.hasPinUvAuthParam = hasPinUvAuthParam
        self.storeCanAnswer = storeCanAnswer
        self.storeExcludes = storeExcludes
    }
}

/// Where one CTAP request goes when a phone may stand behind the key: a pure rule, one row per command.
public enum PhoneRoute: Hashable, Sendable {
    /// The store's authenticator answers, as without the bridge.
    case store
    /// The request goes to a phone byte for byte, and the phone's answer comes back byte for byte.
    case phone
    /// A creation whose place the person chooses: this computer (the store) or a phone.
    case askWhere
    /// Answered at once with this status, nothing asked.
    case refuse(CTAPError)

    /// The route for `facts` in `mode`; `lastRoute` is where the previous request of the session went (a phone's
    /// sign-in has no next assertion to page through here: the phone chose the account).
    ///
    /// | request | `phoneFallback` | `phoneOnly` |
    /// |---|---|---|
    /// | getAssertion | the store when it can answer, else a phone | a phone |
    /// | getAssertion with `up` false (a pre-flight) | the store (never a phone: nothing is shown for a probe) | refused: no credentials |
    /// | makeCredential | the store when it holds an excluded credential (it answers "excluded"), else the person chooses | a phone |
    /// | a ceremony with a pinUvAuthParam | the store (the token is this key's) | refused: PIN auth invalid |
    /// | getNextAssertion | refused after a phone's sign-in, else the store | refused: not allowed |
    /// | getInfo, selection | the store | the store |
    /// | clientPIN, credential management, large blobs, config | the store | refused: invalid command |
    /// | reset | the store | refused: not allowed (it never wipes a store it does not serve) |
    public static func decide(_ facts: PhoneRouteFacts, mode: PhoneBridgeMode, lastRoute: PhoneRoute?) -> PhoneRoute {
        let phoneOnly: Bool
        switch mode {
        case .off: return .store
        case .phoneFallback: phoneOnly = false
        case .phoneOnly: phoneOnly = true
        }
        switch facts.command {
        case .getAssertion:
            if facts.hasPinUvAuthParam { return phoneOnly ? .refuse(.pinAuthInvalid) : .store }
            if facts.userPresence == false { return phoneOnly ? .refuse(.noCredentials) : .store }
            return phoneOnly || !facts.storeCanAnswer ? .phone : .store
        case .makeCredential:
            if facts.hasPinUvAuthParam { return phoneOnly ? .refuse(.pinAuthInvalid) : .store }
            if phoneOnly { return .phone }
            return facts.storeExcludes ? .store : .askWhere
        case .getNextAssertion:
            return phoneOnly || lastRoute == .phone ? .refuse(.notAllowed) : .store
        case .getInfo, .selection:
            return .store
        case .clientPIN, .credentialManagement, .credentialManagementPreview, .largeBlobs, .config:
            return phoneOnly ? .refuse(.invalidCommand) : .store
        case .reset:
            return phoneOnly ? .refuse(.notAllowed) : .store
        default:
            // A command the key does not know: its own authenticator answers "invalid command".
            return .store
        }
    }
}

/// The keepalive a bridged request sends while the phone session goes on: user presence needed while the person
/// has to act (scan the QR code, wake the linked phone), processing once the phone is near.
public enum BridgeKeepalive {
    /// The status to send from `progress` on; nil when the step changes nothing (the answer came).
    public static func status(after progress: HybridClientProgress) -> KeepaliveStatus? {
        switch progress {
        case .showQRCode, .contacting: .userPresenceNeeded
        case .advertSeen, .linkedPhoneNear, .tunnelConnected, .handshakeDone, .requestSent: .processing
        case .responseReceived: nil
        }
    }
}
