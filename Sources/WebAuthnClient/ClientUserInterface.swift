import CTAP2

/// One entry of a chooser.
public enum ClientChoice: Hashable, Sendable {
    /// A passkey an authenticator listed (this computer's, or one a phone or key returned among several).
    case account(CredentialMetadata, on: AuthenticatorKind)
    /// Create the passkey on this computer.
    case thisComputer
    /// Use a phone or tablet: shows a QR code.
    case phone
    /// Use a security key.
    case securityKey
    /// A saved password for the RP, offered beside its passkeys in a combined request (`ClientEngine.get(_:origin:
    /// parameters:passwords:)`).
    case password(PasswordLogin)
}

/// A saved login a combined request may offer: who and where, never the password itself, which the caller reads only
/// once the user picked this login.
public struct PasswordLogin: Hashable, Sendable {
    /// The login's identifier in the caller's vault.
    public var id: [UInt8]
    /// The account name, what the returned credential's `id` is.
    public var userName: String
    /// Where it was saved: the RP's domain, or an `https://` origin on it.
    public var service: String

    public init(id: [UInt8], userName: String, service: String) {
        self.id = id
        self.userName = userName
        self.service = service
    }
}

/// What the user is asked to choose from, and why.
public struct ChoicePrompt: Hashable, Sendable {
    public var ceremony: ClientCeremony
    public var relyingPartyID: String
    /// For registration: the account being registered.
    public var userName: String?
    /// In order: the first is the one the request prefers.
    public var choices: [ClientChoice]
    /// Conditional mediation: shown in the page's autofill rather than a dialog; dismissing it is not an error the
    /// page sees, and an empty list shows nothing.
    public var isConditional: Bool

    public init(
        ceremony: ClientCeremony, relyingPartyID: String, userName: String? = nil, choices: [ClientChoice],
        isConditional: Bool = false
    ) {
        self.ceremony = ceremony
        self.relyingPartyID = relyingPartyID
        self.userName = userName
        self.choices = choices
        self.isConditional = isConditional
    }
}

/// A yes-or-no question the browser itself asks.
public enum ClientQuestion: Hashable, Sendable {
    /// The relying party asked for `direct` or `enterprise` attestation from a security key: may it learn the key's
    /// make and model? (Chromium asks the same before it passes a security key's attestation on.)
    case revealSecurityKeyModel(relyingPartyID: String)
}

/// What the engine is doing, for the user to see. The transports add their own (the QR code, "touch your key").
public enum ClientEvent: Hashable, Sendable {
    /// A session with this kind of authenticator is being opened.
    case contacting(AuthenticatorKind)
    /// The request went to the authenticator; it may ask the user now.
    case waitingForAuthenticator(AuthenticatorKind)
}

/// The user's side of the client: the browser's dialogs. The CLI implements it on the terminal; tests script it.
public protocol ClientUserInterface: Sendable {
    /// Shows `prompt`; returns the index of the choice taken, or nil when the user dismissed it.
    func choose(_ prompt: ChoicePrompt) async -> Int?
    /// Asks a yes-or-no question.
    func confirm(_ question: ClientQuestion) async -> Bool
    /// Collects a security key's PIN; nil when the user cancels. The PIN is used once and never shown or kept.
    func collectPIN(_ request: PINRequest) async -> String?
    /// Reports progress.
    func notify(_ event: ClientEvent) async
}

/// The browser's dialogs answered without a person: the chooser's first entry, no to every question, no PIN. For
/// runs where nobody sits at the computer (the demo, the benchmarks, tests of the layers above the engine); the
/// authenticator still asks for its own user presence and verification.
public struct FirstChoiceInterface: ClientUserInterface {
    public init() {}

    public func choose(_ prompt: ChoicePrompt) async -> Int? { prompt.choices.isEmpty ? nil : 0 }
    public func confirm(_ question: ClientQuestion) async -> Bool { false }
    public func collectPIN(_ request: PINRequest) async -> String? { nil }
    public func notify(_ event: ClientEvent) async {}
}
