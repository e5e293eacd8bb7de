import CTAP2

/// The authenticator's consent, asked through a `ProviderUserInterface`: the policy of what to ask in which order.
///
/// Presence is a yes-or-no question (or, when the authenticator shows its own account chooser, the choice of an
/// account, which is presence too). Verification is the store passphrase, checked by `verifyPassphrase` in constant
/// time, with `attempts` tries. A cancelled or unanswered prompt ends the request as cancelled or timed out; an
/// answer of no, or input that ends, denies it.
public struct ProviderConsent: UserInteraction {
    public let interface: any ProviderUserInterface
    /// Checks a passphrase against the store in constant time.
    public let verifyPassphrase: @Sendable (String) -> Bool
    public var attempts: Int
    /// Whether the passphrase was typed to open the store in this ceremony, which then counts as its verification;
    /// asked once per verification and true at most once (``OpeningVerification``).
    public let verifiedAtOpening: @Sendable () -> Bool

    public init(
        interface: any ProviderUserInterface, attempts: Int = 3,
        verifiedAtOpening: @escaping @Sendable () -> Bool = { false },
        verifyPassphrase: @escaping @Sendable (String) -> Bool
    ) {
        self.interface = interface
        self.attempts = attempts
        self.verifiedAtOpening = verifiedAtOpening
        self.verifyPassphrase = verifyPassphrase
    }

    public func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        var selectedAccount: Int? = nil
        if case .getAssertion(let rp, let accounts, true) = request.action {
            switch await interface.choose(.account(relyingPartyID: rp, accounts: accounts)) {
            case .given(let index):
                guard accounts.indices.contains(index) else { return .denied }
                selectedAccount = index
            case .declined: return .denied
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            }
        } else if request.requiresPresence {
            switch await interface.confirm(.authenticator(request.action)) {
            case .given(true): break
            case .given(false), .declined: return .denied
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            }
        }
        guard request.requiresVerification else {
            return .approved(userVerified: false, selectedAccount: selectedAccount)
        }
        return await verify(selectedAccount: selectedAccount)
    }

    /// User verification alone: the store passphrase, `attempts` tries, each wrong one reported.
    public func verify(selectedAccount: Int?) async -> ConsentResult {
        if verifiedAtOpening() { return .approved(userVerified: true, selectedAccount: selectedAccount) }
        let attempts = max(attempts, 1)
        for attempt in 1...attempts {
            switch await interface.secret(.verification) {
            case .given(let passphrase):
                if verifyPassphrase(passphrase) {
                    return .approved(userVerified: true, selectedAccount: selectedAccount)
                }
                interface.report(.wrongPassphrase(attemptsLeft: attempts - attempt))
            case .declined: return .verificationFailed
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            }
        }
        return .verificationFailed
    }
}

/// Approves everything without asking, and reports each approval: for tests and CI only (`--yes`).
public struct ReportingApproval: UserInteraction {
    public let interface: any ProviderUserInterface

    public init(interface: any ProviderUserInterface) { self.interface = interface }

    public func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        let result = await UnattendedApproval().requestConsent(request)
        if case .approved = result {
            interface.report(.autoApproved(request.action, verification: request.requiresVerification))
        }
        return result
    }
}

/// How a provider question was answered.
public enum ApprovalAnswer: Hashable, Sendable {
    /// Unattended approval answered yes (and it was reported).
    case unattended
    case yes
    case no
}

/// Whether requests are approved without asking: `--yes` or `PASSKEY_ASSUME_YES=1`.
public struct ApprovalMode: Hashable, Sendable {
    /// Why approval is unattended, or nil when the person is asked.
    public var unattendedReason: String?

    public init(yes: Bool, environment: [String: String]) {
        unattendedReason =
            yes ? "--yes" : environment["PASSKEY_ASSUME_YES"] == "1" ? "PASSKEY_ASSUME_YES=1" : nil
    }

    public var unattended: Bool { unattendedReason != nil }

    /// `question`, answered by unattended approval (reported as answered) or by the person through `interface`;
    /// nil when it is not unattended and `canAsk` says there is nobody to ask.
    public func answer(
        _ question: ProviderQuestion, interface: any ProviderUserInterface, canAsk: Bool
    ) async -> ApprovalAnswer? {
        if unattended {
            interface.report(.autoAnswered(question))
            return .unattended
        }
        guard canAsk else { return nil }
        guard case .given(true) = await interface.confirm(question) else { return .no }
        return .yes
    }

    /// The consent to give an authenticator: announced unattended approval, or the person asked through `interface`.
    public func consent(
        interface: any ProviderUserInterface, verifiedAtOpening: @escaping @Sendable () -> Bool = { false },
        verifyPassphrase: @escaping @Sendable (String) -> Bool
    ) -> any UserInteraction {
        guard let unattendedReason else {
            return ProviderConsent(
                interface: interface, verifiedAtOpening: verifiedAtOpening, verifyPassphrase: verifyPassphrase)
        }
        interface.report(.unattendedApprovalOn(reason: unattendedReason))
        return ReportingApproval(interface: interface)
    }
}
