import Basics
import CBOR

/// An account as the user sees it in a prompt or chooser. Never carries key material.
public struct AccountSummary: Hashable, Sendable {
    public var relyingPartyID: String
    public var userName: String?
    public var userDisplayName: String?
    public var credentialID: [UInt8]

    public init(relyingPartyID: String, userName: String?, userDisplayName: String?, credentialID: [UInt8]) {
        self.relyingPartyID = relyingPartyID
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.credentialID = credentialID
    }

    /// The name a prompt shows: the account name, else the display name, else a short credential ID.
    public var label: String {
        userName ?? userDisplayName ?? "credential \(Array(credentialID.prefix(4)).hexString)"
    }
}

extension AccountSummary {
    init(_ credential: StoredCredential) {
        self.init(
            relyingPartyID: credential.relyingPartyID,
            userName: credential.userName,
            userDisplayName: credential.userDisplayName,
            credentialID: credential.id
        )
    }
}

/// What the authenticator asks the user to approve.
public enum UserAction: Hashable, Sendable {
    /// makeCredential: "Create a passkey for example.com (alice)?"
    case makeCredential(relyingPartyID: String, userName: String?, userDisplayName: String?)
    /// makeCredential hit its excludeList: the user confirms before the site learns a passkey exists.
    case credentialExcluded(relyingPartyID: String)
    /// getAssertion: "Sign in to example.com as alice?"; several accounts when the platform asked without an allowList.
    case getAssertion(relyingPartyID: String, accounts: [AccountSummary], chooseOnAuthenticator: Bool)
    /// authenticatorReset: deletes every passkey.
    case reset(passkeyCount: Int)
    /// authenticatorSelection: the platform asks which authenticator the user means.
    case selection
    /// authenticatorClientPIN setPIN: a platform sets the first PIN, which then opens credential management, large
    /// blobs and configuration to whoever knows it.
    case setPIN
    /// A platform asks for a pinUvAuthToken through built-in user verification (the store passphrase), for one
    /// relying party or, when nil, for authenticator management.
    case verifyUser(relyingPartyID: String?)
}

/// One request for the user's consent.
public struct ConsentRequest: Hashable, Sendable {
    public var action: UserAction
    /// Whether the user must confirm they are present.
    public var requiresPresence: Bool
    /// Whether the user must also be verified (built-in UV: the store passphrase).
    public var requiresVerification: Bool

    public init(action: UserAction, requiresPresence: Bool, requiresVerification: Bool) {
        self.action = action
        self.requiresPresence = requiresPresence
        self.requiresVerification = requiresVerification
    }
}

/// The user's answer.
public enum ConsentResult: Hashable, Sendable {
    /// Approved. `userVerified` is true only when verification was asked for and succeeded.
    /// `selectedAccount` is the index chosen when the authenticator showed an account chooser.
    case approved(userVerified: Bool, selectedAccount: Int?)
    /// The user said no.
    case denied
    /// Verification was attempted and failed (wrong passphrase).
    case verificationFailed
    /// Nobody answered in time.
    case timedOut
    /// The platform cancelled the request while the prompt was open.
    case cancelled
}

/// The user-facing side of the authenticator: a terminal prompt, a test double, or an
/// unattended approver for CI. Implementations return `.cancelled` promptly when their task is cancelled.
public protocol UserInteraction: Sendable {
    func requestConsent(_ request: ConsentRequest) async -> ConsentResult
}

/// Approves everything without asking. For tests and CI only; the CLI says so loudly when it is used.
public struct UnattendedApproval: UserInteraction {
    public init() {}

    public func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        if Task.isCancelled { return .cancelled }
        return .approved(userVerified: request.requiresVerification, selectedAccount: nil)
    }
}
