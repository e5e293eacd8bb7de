import CTAP2
import Foundation

/// Asks the person at the terminal: presence is a y/N answer, verification is the store
/// passphrase, and several accounts give a numbered chooser when the authenticator chooses.
struct TerminalUserInteraction: UserInteraction {
    /// Checks a passphrase against the store in constant time.
    let verifyPassphrase: @Sendable (String) -> Bool
    /// How long a prompt waits for an answer (CTAP platforms give up after about 30 s).
    var timeout = Duration.seconds(60)
    var attempts = 3

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        let terminal = Terminal.shared
        var selectedAccount: Int? = nil
        if case .getAssertion(let rp, let accounts, true) = request.action {
            terminal.write("\(rp.terminalSafe): sign in as:\n")
            for (index, account) in accounts.enumerated() {
                terminal.write("  \(index + 1)) \(Self.describe(account))\n")
            }
            terminal.write("Choose 1-\(accounts.count), or press Enter to refuse: ")
            switch await terminal.readLine(timeout: timeout) {
            case .line(let answer):
                guard let choice = Int(answer.trimmingCharacters(in: .whitespaces)),
                    (1...accounts.count).contains(choice)
                else { return .denied }
                selectedAccount = choice - 1
            case .endOfInput: return .denied
            case .cancelled: return Self.cancelled(terminal)
            case .timedOut: return Self.timedOut(terminal)
            }
        } else if request.requiresPresence {
            terminal.write(Self.question(for: request.action) + " [y/N] ")
            switch await terminal.readLine(timeout: timeout) {
            case .line(let answer):
                guard ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    return .denied
                }
            case .endOfInput: return .denied
            case .cancelled: return Self.cancelled(terminal)
            case .timedOut: return Self.timedOut(terminal)
            }
        }

        guard request.requiresVerification else {
            return .approved(userVerified: false, selectedAccount: selectedAccount)
        }
        for attempt in 1...attempts {
            switch await terminal.readSecret(prompt: "Store passphrase to verify it is you: ", timeout: timeout) {
            case .line(let passphrase):
                if verifyPassphrase(passphrase) {
                    return .approved(userVerified: true, selectedAccount: selectedAccount)
                }
                terminal.write(attempt < attempts ? "Wrong passphrase, try again.\n" : "Wrong passphrase.\n")
            case .endOfInput: return .verificationFailed
            case .cancelled: return Self.cancelled(terminal)
            case .timedOut: return Self.timedOut(terminal)
            }
        }
        return .verificationFailed
    }

    /// The question for `action`, on one line that starts with the RP ID: the one name here that the platform
    /// checked (against the page's origin). Names the site chose follow in quotes (`siteChosen`), so that none can
    /// pass for the RP ID or end the sentence early.
    static func question(for action: UserAction) -> String {
        switch action {
        case .makeCredential(let rp, let name, let displayName):
            let who = (name ?? displayName).map { " for \($0.siteChosen)" } ?? ""
            return "\(rp.terminalSafe): create a passkey\(who)?"
        case .credentialExcluded(let rp):
            return "\(rp.terminalSafe): asked to register a passkey that already exists here. Tell it so?"
        case .getAssertion(let rp, let accounts, _):
            let labels = accounts.map(\.label.siteChosen)
            if accounts.count == 1 { return "\(rp.terminalSafe): sign in as \(labels[0])?" }
            return "\(rp.terminalSafe): sign in (\(accounts.count) accounts: \(labels.joined(separator: ", ")))?"
        case .reset(let count):
            return "Reset the authenticator and DELETE ALL \(count) passkey\(count == 1 ? "" : "s")?"
        case .selection:
            return "Use this authenticator?"
        case .verifyUser(let rp):
            if let rp { return "\(rp.terminalSafe): verify yourself?" }
            return "Verify yourself to manage this authenticator?"
        }
    }

    static func describe(_ account: AccountSummary) -> String {
        guard let displayName = account.userDisplayName, displayName != account.label else {
            return account.label.siteChosen
        }
        return "\(account.label.siteChosen) (\(displayName.siteChosen))"
    }

    private static func cancelled(_ terminal: Terminal) -> ConsentResult {
        terminal.write("\n(cancelled by the platform)\n")
        return .cancelled
    }

    private static func timedOut(_ terminal: Terminal) -> ConsentResult {
        terminal.write("\n(no answer in time)\n")
        return .timedOut
    }
}

/// The unattended approver, announced once on standard error so nobody mistakes it for a prompt.
enum Unattended {
    static func announce(reason: String) {
        Terminal.shared.write(
            "passkey: unattended approval is ON (\(reason)): every request is approved without asking. "
                + "Use it for tests and CI only.\n")
    }

    /// The approver that also logs each approval, so the output shows what was approved.
    struct LoggingApproval: UserInteraction {
        /// Where each approval is reported; standard error unless the caller says otherwise.
        var report: @Sendable (String) -> Void = { Terminal.shared.write($0 + "\n") }

        func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
            let result = await UnattendedApproval().requestConsent(request)
            if case .approved = result {
                var line = "passkey: auto-approved: " + TerminalUserInteraction.question(for: request.action)
                if request.requiresVerification { line += " (user verification auto-approved)" }
                report(line)
            }
            return result
        }
    }
}
