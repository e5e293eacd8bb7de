import CTAP2

/// A person's answer to one prompt: what they gave, or why there is none.
public enum PromptAnswer<Value: Sendable>: Sendable {
    /// They answered.
    case given(Value)
    /// They said no, pressed Enter on nothing, or their input ended.
    case declined
    /// The prompt was cancelled (Ctrl-C, or the platform withdrew the request).
    case cancelled
    /// Nobody answered in time.
    case timedOut
}

extension PromptAnswer: Equatable where Value: Equatable {}

/// A yes-or-no question the provider asks before it acts.
public enum ProviderQuestion: Hashable, Sendable {
    /// An authenticator asks for the person's presence (create a passkey, sign in, reset, select).
    case authenticator(UserAction)
    /// Replace the different password saved for `user` at `service`?
    case replacePassword(user: String, service: String)
    /// `app` wants to change the saved password for `user` at `service`.
    case appChangesPassword(app: String, user: String, service: String)
    /// Delete the saved password for `user` at `service`?
    case deletePassword(user: String, service: String)
    /// Delete the one-time code for `user` at `service`?
    case deleteOneTimeCode(user: String, service: String)
    /// `app` wants to delete the saved password for `user` at `service`.
    case appDeletesPassword(app: String, user: String, service: String)
    /// Delete the passkey for `account` at `relyingPartyID` (nil: a damaged row, `account` its credential ID)? It
    /// cannot be undone.
    case deletePasskey(relyingPartyID: String?, account: String)
    /// Add `count` imported passkeys (and `passwords` saved passwords, `oneTimeCodes` one-time codes) to the store at
    /// `store`?
    case importPasskeys(count: Int, passwords: Int = 0, oneTimeCodes: Int = 0, store: String)
    /// Share the passkey for `user` at `relyingPartyID` with the person nearby? (User verification follows.)
    case sharePasskey(relyingPartyID: String, user: String)
    /// Add the passkey a person nearby shares (shown just before) to the store at `store`?
    case addSharedPasskey(store: String)
}

/// A secret the provider asks for. Secrets are used once, never shown, logged or kept.
public enum SecretRequest: Hashable, Sendable {
    /// The passphrase that unlocks the store at this path.
    case storePassphrase(path: String)
    /// A passphrase for a new store at this path; `confirming` the second time it is asked.
    case newStorePassphrase(path: String, confirming: Bool)
    /// The store passphrase again, as user verification for a request.
    case verification
    /// A password to save in the vault; `confirming` the second time it is asked.
    case newPassword(confirming: Bool)
    /// The passphrase of an export archive; `confirming` the second time it is asked (a new archive).
    case archivePassphrase(confirming: Bool)
}

/// A list to choose one entry from.
public enum ChoiceRequest: Hashable, Sendable {
    /// Which account to sign in as, chosen on this authenticator.
    case account(relyingPartyID: String, accounts: [AccountSummary])
    /// Which saved login to give `app` (`password request`); refusing gives it nothing.
    case sharedLogin(app: String, logins: [SavedLoginSummary])
    /// Where to create a passkey a site asks the security key for: entry 0 is this computer (the store), entry 1 a
    /// phone (`serve --phone`).
    case whereToCreate(relyingPartyID: String, userName: String?)
}

/// What the provider asks of the person and tells them, whichever role it plays: a phone answering a QR code, a
/// security key, a vault. The terminal is one implementation; a test's scripted person is another. Implementations
/// only ask and render: the order of the prompts, how many tries a passphrase gets and what an answer means are the
/// provider's (`ProviderConsent`, `StoreAccess`).
///
/// The browser role asks through the WebAuthn client's own `ClientUserInterface` as well (choose an authenticator,
/// a security key's PIN), which the same object implements.
public protocol ProviderUserInterface: Sendable {
    /// Asks a yes-or-no question.
    func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool>
    /// Shows a list; the index of the entry taken.
    func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int>
    /// Asks for a secret without echo.
    func secret(_ request: SecretRequest) async -> PromptAnswer<String>
    /// Tells the person how the work goes.
    func report(_ event: ProviderEvent)
}
