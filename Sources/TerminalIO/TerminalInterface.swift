import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import PasskeyProvider
import Proximity

/// The person at the terminal, for the provider's services: questions as `[y/N]` lines, accounts as a numbered list,
/// secrets without echo, and events as lines on standard error (the phone's with the time since the command
/// started). It renders and reads; what to ask when is the provider's.
public struct TerminalInterface: ProviderUserInterface {
    /// How long a question waits for an answer (CTAP platforms give up after about 30 s).
    public var answerTimeout = Duration.seconds(60)
    /// How long a question about saved passwords waits.
    public var vaultAnswerTimeout = Duration.seconds(120)
    /// How long a store passphrase prompt waits (and a password to save).
    public var passphraseTimeout = Duration.seconds(300)
    /// When the command started, for the phone's status lines.
    public let started = ContinuousClock.now

    public var terminal: Terminal { Terminal.shared }

    /// Whether there is a person to ask: standard input is a terminal.
    public var canAsk: Bool { terminal.isInteractive }

    public init() {}

    public func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> {
        terminal.write(Self.text(of: question) + " [y/N] ")
        // The vault's questions wait as long as the password commands always have; an authenticator's, as long as
        // its platform does.
        let timeout =
            switch question {
            case .authenticator: answerTimeout
            case .importPasskeys, .addSharedPasskey: passphraseTimeout
            default: vaultAnswerTimeout
            }
        switch await terminal.readLine(timeout: timeout) {
        case .line(let answer):
            return .given(["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()))
        case .endOfInput: return .declined
        case .cancelled: return cancelled()
        case .timedOut: return timedOut()
        }
    }

    public func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> {
        switch request {
        case .account(let rp, let accounts):
            terminal.write("\(rp.terminalSafe): sign in as:\n")
            for (index, account) in accounts.enumerated() {
                terminal.write("  \(index + 1)) \(Self.describe(account))\n")
            }
            return await pick(among: accounts.count, timeout: answerTimeout)
        case .sharedLogin(_, let logins):
            show(request)
            return await pick(among: logins.count, timeout: vaultAnswerTimeout)
        case .whereToCreate:
            show(request)
            return await pick(among: 2, timeout: answerTimeout)
        }
    }

    /// Shows a list to choose from (accounts are shown as they are asked for).
    private func show(_ request: ChoiceRequest) {
        switch request {
        case .sharedLogin(let app, let logins):
            terminal.write("\(app.siteChosen) wants to use one of your saved passwords:\n")
            for (index, login) in logins.enumerated() {
                terminal.write("  \(index + 1)) \(login.user.siteChosen) at \(login.service.terminalSafe)\n")
            }
        case .whereToCreate(let rp, let name):
            let who = name.map { " for \($0.siteChosen)" } ?? ""
            terminal.write("\(rp.terminalSafe): where should the passkey\(who) be created?\n")
            terminal.write("  1) this computer\n  2) a phone (shows a QR code)\n")
        case .account:
            break
        }
    }

    /// What an import will add: one line a passkey, saved password and one-time code, the passkeys' notes, and each
    /// credential skipped, by type and item.
    private func show(_ preview: ImportPreview) {
        var holds = [preview.entries.count.counted("passkey")]
        if !preview.passwords.isEmpty { holds.append(preview.passwords.count.counted("saved password")) }
        if !preview.oneTimeCodes.isEmpty { holds.append(preview.oneTimeCodes.count.counted("one-time code")) }
        terminal.write("\(preview.file.terminalSafe): \(preview.source) with \(holds.joined(separator: ", "))\n")
        let dates = ISO8601DateFormatter()
        for entry in preview.entries {
            var line = "  \(entry.relyingPartyID.terminalSafe)  \((entry.userName ?? "no name").siteChosen)"
            line += "  created \(dates.string(from: entry.created))"
            if entry.duplicate { line += "  (already in the store: skipped)" }
            terminal.write(line + "\n")
            for note in entry.notes { terminal.write("      note: \(note.terminalSafe)\n") }
        }
        for (kind, logins) in [("password", preview.passwords), ("one-time code", preview.oneTimeCodes)] {
            for login in logins {
                var line = "  \(kind) \(login.service.terminalSafe)  \(login.userName.siteChosen)"
                if login.duplicate { line += "  (already in the store: skipped)" }
                terminal.write(line + "\n")
            }
        }
        for (type, count) in preview.skippedTypes.sorted(by: { $0.key < $1.key }) {
            terminal.write("  skipped \(count.counted("credential")) of type \(type.siteChosen)\n")
            for skipped in preview.skipped where skipped.type == type {
                terminal.write("      \(skipped.title.siteChosen): \(skipped.reason.terminalSafe)\n")
            }
        }
    }

    /// Reads the number of one of `count` entries; anything else refuses.
    private func pick(among count: Int, timeout: Duration) async -> PromptAnswer<Int> {
        terminal.write("Choose 1-\(count), or press Enter to refuse: ")
        switch await terminal.readLine(timeout: timeout) {
        case .line(let answer):
            guard let choice = Int(answer.trimmingCharacters(in: .whitespaces)), (1...count).contains(choice)
            else { return .declined }
            return .given(choice - 1)
        case .endOfInput: return .declined
        case .cancelled: return cancelled()
        case .timedOut: return timedOut()
        }
    }

    public func secret(_ request: SecretRequest) async -> PromptAnswer<String> {
        let prompt: String
        let timeout: Duration
        switch request {
        case .storePassphrase(let path):
            (prompt, timeout) = ("Passphrase for \(path): ", passphraseTimeout)
        case .newStorePassphrase(let path, false):
            (prompt, timeout) = ("Choose a passphrase for the new store at \(path): ", passphraseTimeout)
        case .newStorePassphrase(_, true):
            (prompt, timeout) = ("Repeat the passphrase: ", passphraseTimeout)
        case .verification:
            (prompt, timeout) = ("Store passphrase to verify it is you: ", answerTimeout)
        case .newPassword(let confirming):
            (prompt, timeout) = (confirming ? "Repeat it: " : "Password: ", passphraseTimeout)
        case .archivePassphrase(let confirming):
            (prompt, timeout) = (confirming ? "Repeat it: " : "Archive passphrase: ", passphraseTimeout)
        }
        switch await terminal.readSecret(prompt: prompt, timeout: timeout) {
        case .line(let secret): return .given(secret)
        case .endOfInput: return .declined
        case .cancelled: return cancelled()
        case .timedOut: return timedOut()
        }
    }

    public func report(_ event: ProviderEvent) {
        switch event {
        case .storeCreated(let path):
            if OutputLevel.current.showsProgress {
                terminal.write("passkey: created a new encrypted passkey store at \(path)\n")
            }
        case .hiddenPasskeysDeleted(let count, let graceDays):
            terminal.write(
                "passkey: deleted \(count == 1 ? "a passkey" : "\(count) passkeys") hidden by a site's signal more "
                    + "than \(graceDays) days ago\n")
        case .damagedCredentialSkipped(let damaged):
            terminal.write("passkey: store error: \(damaged); skipped\n")
        case .storeError(let error):
            terminal.write("passkey: store error: \(error)\n")
        case .wrongPassphrase(let attemptsLeft):
            terminal.write(attemptsLeft > 0 ? "Wrong passphrase, try again.\n" : "Wrong passphrase.\n")
        case .unattendedApprovalOn(let reason):
            Unattended.announce(reason: reason)
        case .autoApproved(let action, let verification):
            var line = "passkey: auto-approved: " + Self.question(for: action)
            if verification { line += " (user verification auto-approved)" }
            terminal.write(line + "\n")
        case .autoAnswered(let question) where question.isImport:
            terminal.write("passkey: auto-approved (--yes): \(Self.text(of: question))\n")
        case .autoAnswered(let question):
            let verification = if case .sharePasskey = question { " (user verification auto-approved)" } else { "" }
            terminal.write("passkey: auto-approved: \(Self.text(of: question))\(verification)\n")
        case .importing(let preview):
            show(preview)
        case .autoChose(let request, let index):
            show(request)
            terminal.write("passkey: auto-chose \(index + 1) (unattended approval)\n")
        case .phone(let event):
            status(PhoneLines.line(for: event))
        case .computer(let event):
            if OutputLevel.current.showsProgress { terminal.write("passkey: " + Self.line(for: event) + "\n") }
        case .bridge(let event):
            if let line = Self.line(for: event) { status("phone: " + line) }
        case .share(.offered(let relyingPartyID, let userName, let displayName, let created, let notes)):
            var text = "A person nearby shares a passkey:\n  \(relyingPartyID.terminalSafe)  "
            text += (userName ?? "no name").siteChosen
            if let displayName, displayName != userName { text += " (\(displayName.siteChosen))" }
            text += "  created \(ISO8601DateFormatter().string(from: created))\n"
            for note in notes { text += "      note: \(note.terminalSafe)\n" }
            terminal.write(text)
        }
    }

    /// The computer's events: plain lines, as the browser commands printed them before the provider held them.
    public static func line(for event: ComputerEvent) -> String {
        switch event {
        case .phoneRemembered(let name, let file):
            "remembered the phone \"\(name.terminalSafe)\" (\(file)): "
                + "`passkey client get --phone \"\(name.terminalSafe)\"` reaches it without a QR code"
        case .linksSealed(let count, let from, let to):
            "moved \(count.counted("linked phone")) from \(from) into \(to), sealed under the store key; "
                + "removed \(from)"
        case .linkNotSaved(let reason):
            "the phone's link could not be saved: \(reason)"
        case .linkRevoked(let name, let file):
            "the phone \"\(name.terminalSafe)\" revoked this link (the relay says it is gone); forgot it (\(file))"
        case .verifiedByRelyingParty:
            "verified by the relying party"
        }
    }

    /// The phone behind the key's events; nil for the steps the QR code and the keepalives already show.
    public static func line(for event: BridgeEvent) -> String? {
        switch event {
        case .toPhone(let command, let linked):
            let what = command == CTAPCommand.makeCredential.rawValue ? "a registration" : "a sign-in"
            return linked ? "\(what) goes to the linked phone" : "\(what) goes to a phone: scan the QR code"
        case .session(let progress):
            switch progress {
            case .showQRCode, .requestSent, .responseReceived: return nil
            case .advertSeen(_, let domain): return "advert seen: the phone is near; relay \(domain.host)"
            case .contacting(let url): return "asking the relay \(PhoneLines.host(of: url)) to wake the linked phone"
            case .linkedPhoneNear: return "the linked phone is near: handshake"
            case .tunnelConnected(let url): return "tunnel connected: \(PhoneLines.host(of: url))"
            case .handshakeDone: return ClientLines.tunnelStep(progress)
            }
        case .linkedPhoneFailed(let reason):
            return "the linked phone was not reached (\(reason)); showing a QR code"
        case .answered(let status):
            return "answer sent: \(status == 0 ? "OK" : CTAPError(rawValue: status).description)"
        case .failed(let reason, let status):
            return "no answer from a phone (\(reason)): the browser is told \(CTAPError(rawValue: status).description)"
        }
    }

    /// A status line, stamped with the time since the command started; none when the command is quiet
    /// (`OutputLevel`).
    public func status(_ text: String) {
        guard OutputLevel.current.showsProgress else { return }
        terminal.write(StatusLine.line(text, since: started))
    }

    private func cancelled<Value>() -> PromptAnswer<Value> {
        terminal.write("\n(cancelled by the platform)\n")
        return .cancelled
    }

    private func timedOut<Value>() -> PromptAnswer<Value> {
        terminal.write("\n(no answer in time)\n")
        return .timedOut
    }

    /// The question for `action`, on one line that starts with the RP ID: the one name here that the platform
    /// checked (against the page's origin). Names the site chose follow in quotes (`siteChosen`), so that none can
    /// pass for the RP ID or end the sentence early.
    public static func question(for action: UserAction) -> String {
        switch action {
        case .makeCredential(let rp, let name, let displayName):
            let who = (name ?? displayName).map { " for \($0.siteChosen)" } ?? ""
            return "\(rp.terminalSafe): create a passkey\(who)?"
        case .credentialExcluded(let rp):
            return "\(rp.terminalSafe): asked to register a passkey that already exists here. Tell it so?"
        case .getAssertion(let rp, let accounts, _):
            let labels = accounts.map(\.label.siteChosen)
            if accounts.count == 1 { return "\(rp.terminalSafe): sign in as \(labels[0])?" }
            return
                "\(rp.terminalSafe): sign in (\(accounts.count.counted("account")): \(labels.joined(separator: ", ")))?"
        case .reset(let count):
            return "Reset the authenticator and DELETE ALL \(count.counted("passkey"))?"
        case .selection:
            return "Use this authenticator?"
        case .setPIN:
            return "Set a PIN on this authenticator?"
        case .verifyUser(let rp):
            if let rp { return "\(rp.terminalSafe): verify yourself?" }
            return "Verify yourself to manage this authenticator?"
        }
    }

    /// A question on one line. Names an app, a site or a person chose are quoted (`siteChosen`).
    public static func text(of question: ProviderQuestion) -> String {
        switch question {
        case .authenticator(let action):
            return Self.question(for: action)
        case .replacePassword(let user, let service):
            return "A different password is saved for \(user.siteChosen) at \(service.terminalSafe). Replace it?"
        case .appChangesPassword(let app, let user, let service):
            return "\(app.siteChosen) wants to change your saved password for \(user.siteChosen) at "
                + "\(service.terminalSafe)."
        case .deletePassword(let user, let service):
            return "Delete the saved password for \(user.siteChosen) at \(service.terminalSafe)?"
        case .deleteOneTimeCode(let user, let service):
            return "Delete the one-time code for \(user.siteChosen) at \(service.terminalSafe)? It cannot be undone."
        case .appDeletesPassword(let app, let user, let service):
            return "\(app.siteChosen) wants to delete your saved password for \(user.siteChosen) at "
                + "\(service.terminalSafe)."
        case .deletePasskey(let relyingPartyID?, let account):
            return
                "Delete the passkey for \(account.siteChosen) at \(relyingPartyID.terminalSafe)? It cannot be undone."
        case .deletePasskey(nil, let account):
            return "Delete the damaged passkey \(account.terminalSafe)? It cannot be undone."
        case .importPasskeys(let count, let passwords, let codes, let store):
            var parts = count > 0 || passwords + codes == 0 ? [count.counted("passkey")] : []
            if passwords > 0 { parts.append(passwords.counted("saved password")) }
            if codes > 0 { parts.append(codes.counted("one-time code")) }
            let listed =
                parts.count > 1 ? parts.dropLast().joined(separator: ", ") + " and " + parts[parts.count - 1] : parts[0]
            return "Add \(listed) to \(store)?"
        case .sharePasskey(let relyingPartyID, let user):
            return "\(relyingPartyID.terminalSafe): share the passkey for \(user.siteChosen) with the person nearby?"
        case .addSharedPasskey(let store):
            return "Add it to \(store)?"
        }
    }

    public static func describe(_ account: AccountSummary) -> String {
        guard let displayName = account.userDisplayName, displayName != account.label else {
            return account.label.siteChosen
        }
        return "\(account.label.siteChosen) (\(displayName.siteChosen))"
    }
}

/// The unattended approver's announcement, on standard error so nobody mistakes it for a prompt.
public enum Unattended {
    public static func announce(reason: String) {
        Terminal.shared.write(
            "passkey: unattended approval is ON (\(reason)): every request is approved without asking. "
                + "Use it for tests and CI only.\n")
    }
}

extension ProviderQuestion {
    /// Whether this is an import's question, which `--yes` answers with its own line.
    fileprivate var isImport: Bool {
        if case .importPasskeys = self { return true }
        return false
    }
}
