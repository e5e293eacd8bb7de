import Basics
import CTAP2
import Foundation
import PasskeySettings

/// One way of asking the person for a request's consent.
public enum ConsentRoute: String, Hashable, Sendable {
    /// A `[y/N]` prompt on the terminal (and, without one, a decline).
    case terminal
    /// A desktop notification with Allow and Deny (`org.freedesktop.Notifications`).
    case notification
    /// A file in `$XDG_RUNTIME_DIR/passkey/pending`, answered by `passkey approve ID` or `passkey deny ID`.
    case queue
}

/// Which routes a service uses for the `consent` setting (`Docs/Consent.md`): pure, from what the process has.
public enum ConsentRoutes {
    /// The routes to try for each request, in order: a request goes to the next one when the one before cannot
    /// take it (no notification server answers). `terminal` stays alone: it decides at once (a decline without a
    /// terminal, as before).
    ///
    /// - `terminal`: the terminal.
    /// - `notification`: a notification, else the queue (when there is a runtime directory to keep it in).
    /// - `queue`: the queue; the terminal when there is no runtime directory (it declines).
    /// - `auto`: the terminal when standard input is one; else a notification when there is a session bus, and the
    ///   queue when there is a runtime directory; else the terminal.
    public static func choose(
        _ channel: ConsentChannel, standardInputIsTerminal: Bool, sessionBus: Bool, runtimeDirectory: Bool
    ) -> [ConsentRoute] {
        switch channel {
        case .terminal:
            return [.terminal]
        case .notification:
            return runtimeDirectory ? [.notification, .queue] : [.notification]
        case .queue:
            return runtimeDirectory ? [.queue] : [.terminal]
        case .auto:
            if standardInputIsTerminal { return [.terminal] }
            let routes = (sessionBus ? [ConsentRoute.notification] : []) + (runtimeDirectory ? [.queue] : [])
            return routes.isEmpty ? [.terminal] : routes
        }
    }
}

/// Whether an Allow given without a terminal counts as user verification: a person cannot type a passphrase into a
/// notification, so it counts only while the store agent holds the key and the person unlocked it (typed the
/// passphrase) within `consent-uv-window`. Otherwise the Allow is presence only, and the authenticator refuses what
/// needs verification, saying why.
public enum AllowVerification: Hashable, Sendable {
    /// The request does not ask for verification.
    case notNeeded
    /// An Allow verifies: the store was unlocked `unlockedAgo` ago, within the window.
    case given(unlockedAgo: Duration)
    /// An Allow does not verify, for `reason` (a sentence for the log and the notification).
    case notGiven(reason: String)

    /// The decision for a request: `unlockedAgo` is the agent's time since the store was unlocked, nil when no agent
    /// holds its key; `window` is `consent-uv-window` (zero: never).
    public static func decide(requiresVerification: Bool, unlockedAgo: Duration?, window: Duration) -> Self {
        guard requiresVerification else { return .notNeeded }
        guard window > .zero else {
            return .notGiven(reason: "consent-uv-window is 0, so an answer without a terminal never verifies you")
        }
        guard let unlockedAgo else {
            return .notGiven(reason: "the store is not unlocked in the agent (run passkey unlock)")
        }
        guard unlockedAgo <= window else {
            return .notGiven(
                reason: "the store was unlocked \(minutesText(unlockedAgo)) ago, more than consent-uv-window's "
                    + "\(minutesText(window)) (run passkey unlock again)")
        }
        return .given(unlockedAgo: unlockedAgo)
    }

    /// Whether an Allow verifies.
    public var verifies: Bool { if case .given = self { true } else { false } }

    /// `1 minute`, `5 minutes`, `30 seconds`.
    static func minutesText(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        if seconds < 60 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        let minutes = seconds / 60
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }
}

/// What the person answers a ``ConsentPrompt`` with, besides Deny.
public enum ConsentChoice: Hashable, Sendable {
    /// Allow, the one answer (a single account to sign in as is an Allow too).
    case allow
    /// Which account to sign in as, on this authenticator's chooser: the answer is its index.
    case account([AccountSummary])
    /// Where to create the passkey a site asks a security key with a phone behind it for: 0 this computer (the
    /// store), 1 a phone (`serve --phone`).
    case place

    /// The places of ``place``, in the order of their answers.
    public static let places = ["this computer", "a phone"]
}

/// One request put to the person without a terminal: what the relying party asks, whether an Allow verifies, what
/// the person chooses among (an account, where to create the passkey, or just Allow) and how long it waits.
public struct ConsentPrompt: Hashable, Sendable {
    public var action: UserAction
    public var verification: AllowVerification
    public var choice: ConsentChoice
    public var timeout: Duration

    public init(action: UserAction, verification: AllowVerification, choice: ConsentChoice, timeout: Duration) {
        self.action = action
        self.verification = verification
        self.choice = choice
        self.timeout = timeout
    }

    /// A prompt whose choice is among `accounts` (Allow alone when there is at most one).
    public init(action: UserAction, verification: AllowVerification, accounts: [AccountSummary], timeout: Duration) {
        self.init(
            action: action, verification: verification, choice: accounts.isEmpty ? .allow : .account(accounts),
            timeout: timeout)
    }

    /// Where to create a passkey for `relyingPartyID` (and `userName`), when a security key has a phone behind it.
    public static func whereToCreate(relyingPartyID: String, userName: String?, timeout: Duration) -> Self {
        ConsentPrompt(
            action: .makeCredential(relyingPartyID: relyingPartyID, userName: userName, userDisplayName: nil),
            verification: .notNeeded, choice: .place, timeout: timeout)
    }

    /// The accounts offered, when the person chooses one on this authenticator; empty otherwise.
    public var accounts: [AccountSummary] {
        if case .account(let accounts) = choice { accounts } else { [] }
    }

    /// The answers to choose among, as the person reads them (an account's label, a place), when there are two or
    /// more; empty when the answer is Allow. An answer is an index into this list.
    public var choices: [String] {
        switch choice {
        case .allow: []
        case .account(let accounts): accounts.count > 1 ? accounts.map { Self.plain($0.label) } : []
        case .place: ConsentChoice.places
        }
    }

    /// Whether `index` answers this prompt: an index into ``choices``, or 0 for an Allow.
    public func accepts(_ index: Int) -> Bool {
        choices.isEmpty ? index == 0 : choices.indices.contains(index)
    }

    /// The relying party that asks, or nil for the authenticator's own actions (reset, PIN).
    public var relyingPartyID: String? {
        switch action {
        case .makeCredential(let rp, _, _), .credentialExcluded(let rp), .getAssertion(let rp, _, _): rp
        case .verifyUser(let rp): rp
        case .reset, .selection, .setPIN: nil
        }
    }

    /// What is asked, in a few words: `sign in`, `create a passkey`…
    public var actionName: String {
        switch action {
        case .makeCredential: "create a passkey"
        case .credentialExcluded: "learn that a passkey exists"
        case .getAssertion: "sign in"
        case .reset: "reset the authenticator"
        case .selection: "select this authenticator"
        case .setPIN: "set the authenticator's PIN"
        case .verifyUser: "verify you"
        }
    }

    /// One line saying who asks what: `example.com asks to sign in as alice`.
    public var summary: String {
        let who = relyingPartyID.map(Self.plain) ?? "A platform"
        switch action {
        case .makeCredential(_, let name, let displayName):
            let account = (name ?? displayName).map { " for \(Self.plain($0))" } ?? ""
            return "\(who) asks to create a passkey\(account)"
        case .getAssertion(_, let accounts, _) where accounts.count == 1:
            return "\(who) asks to sign in as \(Self.plain(accounts[0].label))"
        case .reset(let count):
            return "\(who) asks to reset the authenticator (deletes \(count.counted("passkey")))"
        default:
            return "\(who) asks to \(actionName)"
        }
    }

    /// What follows the summary: the choice, and what an Allow means for verification.
    public var details: [String] {
        var lines: [String] = []
        switch choice {
        case .account where !choices.isEmpty: lines.append("Choose an account: " + choices.joined(separator: ", "))
        case .place: lines.append("Choose where: this computer (the passkey store), or a phone (shows a QR code).")
        case .allow, .account: break
        }
        switch verification {
        case .notNeeded: break
        case .given: lines.append("Allow also verifies you (the store was unlocked recently).")
        case .notGiven(let reason):
            lines.append(
                "Allow counts as presence only, not as verification: \(reason). A site that requires verification "
                    + "will refuse it.")
        }
        lines.append("Expires in \(AllowVerification.minutesText(timeout)).")
        return lines
    }

    /// Text from a site with control and format characters (bidi overrides) left out, at most 100 characters.
    public static func plain(_ text: String) -> String {
        let kept = text.unicodeScalars.filter {
            !($0.properties.generalCategory == .control || $0.properties.generalCategory == .format)
        }
        let result = String(String.UnicodeScalarView(kept))
        return result.count > 100 ? String(result.prefix(99)) + "…" : result
    }
}

/// Asks one `ConsentPrompt` without a terminal: the answer is the index of the account chosen (0 when there is no
/// choice) or why there is none.
public protocol ConsentAsker: Sendable {
    func ask(_ prompt: ConsentPrompt) async -> PromptAnswer<Int>
}

/// The authenticator's consent for a service without a terminal: presence is an Allow through `asker`; user
/// verification is that Allow only when `AllowVerification` says so (the agent unlocked within the window).
/// Otherwise a credential request is answered as presence only (the UV flag stays clear, so a relying party that
/// requires verification refuses it), and a request for a verification token (`verifyUser`), which would claim
/// verification, is refused without asking; either way the reason goes to the log.
public struct ConsentWithoutTerminal: UserInteraction {
    public let asker: any ConsentAsker
    /// The time since the person unlocked the store in the agent; nil when no agent holds its key.
    public let unlockedAgo: @Sendable () -> Duration?
    public let window: Duration
    public let timeout: Duration
    /// Where a refused verification is said (the log).
    public let log: @Sendable (String) -> Void

    public init(
        asker: any ConsentAsker, window: Duration, timeout: Duration,
        unlockedAgo: @escaping @Sendable () -> Duration?, log: @escaping @Sendable (String) -> Void
    ) {
        self.asker = asker
        self.window = window
        self.timeout = timeout
        self.unlockedAgo = unlockedAgo
        self.log = log
    }

    public func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        guard request.requiresPresence || request.requiresVerification else {
            return .approved(userVerified: false, selectedAccount: nil)
        }
        let verification = AllowVerification.decide(
            requiresVerification: request.requiresVerification,
            unlockedAgo: request.requiresVerification ? unlockedAgo() : nil, window: window)
        if case .notGiven(let reason) = verification, case .verifyUser = request.action {
            log("passkey: consent: refused a request for user verification without a terminal: \(reason)")
            return .denied
        }
        var accounts: [AccountSummary] = []
        if case .getAssertion(_, let offered, true) = request.action { accounts = offered }
        let prompt = ConsentPrompt(
            action: request.action, verification: verification, accounts: accounts, timeout: timeout)
        switch await asker.ask(prompt) {
        case .given(let index):
            let selected: Int?
            if accounts.isEmpty {
                selected = nil
            } else {
                guard accounts.indices.contains(index) else { return .denied }
                selected = index
            }
            if case .notGiven(let reason) = verification {
                log("passkey: consent: allowed as presence only, not as verification: \(reason)")
            }
            return .approved(userVerified: verification.verifies, selectedAccount: selected)
        case .declined: return .denied
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut
        }
    }
}
