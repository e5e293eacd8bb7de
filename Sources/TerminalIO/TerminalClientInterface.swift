import Basics
import CTAP2
import Foundation
import PasskeyProvider
import SecurityKeyDriver
import WebAuthnClient
import WebAuthnClientIO
import Synchronization

/// The browser's dialogs on the terminal: the chooser, the attestation question, the security key's PIN and
/// progress, all on standard error. With `--yes` (tests and CI) the first choice is taken and said so.
public struct TerminalClientInterface: ClientUserInterface {
    public let unattended: Bool
    public let pin: PINSource

    public init(unattended: Bool, pin: @escaping PINSource) {
        self.unattended = unattended
        self.pin = pin
    }

    /// Whether a chooser found nobody to answer it: no terminal, and standard input ended (or was the options).
    /// The failure then says so (`ClientLines.failure`) rather than that the person cancelled.
    public static var nobodyAnswered: Bool { nobodyAnsweredFlag.load(ordering: .relaxed) }
    private static let nobodyAnsweredFlag = Atomic<Bool>(false)

    public func choose(_ prompt: ChoicePrompt) async -> Int? {
        let terminal = Terminal.shared
        // Without a terminal the answer can only come on standard input: read it first, and show no chooser when
        // there is none (a script, a service, `--options -` having read standard input to its end).
        var piped: Terminal.ReadResult? = nil
        if !unattended, !terminal.isInteractive {
            let read = await terminal.readLine(timeout: .seconds(120))
            guard case .line = read else {
                Self.nobodyAnsweredFlag.store(true, ordering: .relaxed)
                return nil
            }
            piped = read
        }
        let verb = prompt.ceremony == .create ? "Create a passkey" : "Sign in"
        var header = "\(prompt.relyingPartyID.terminalSafe): \(verb)"
        if let userName = prompt.userName { header += " for \(userName.siteChosen)" }
        if prompt.isConditional { header += " (passkeys offered as autofill)" }
        terminal.write(header + ":\n")
        for (index, choice) in prompt.choices.enumerated() {
            terminal.write("  \(index + 1)) \(Self.describe(choice))\n")
        }
        if unattended {
            terminal.write("passkey: auto-chose 1 (unattended approval)\n")
            return prompt.choices.isEmpty ? nil : 0
        }
        terminal.write("Choose 1-\(prompt.choices.count), or press Enter to cancel: ")
        let read: Terminal.ReadResult
        if let piped {
            read = piped
        } else {
            read = await terminal.readLine(timeout: .seconds(120))
        }
        guard case .line(let answer) = read,
            let choice = Int(answer.trimmingCharacters(in: .whitespaces)), (1...prompt.choices.count).contains(choice)
        else { return nil }
        return choice - 1
    }

    public static func describe(_ choice: ClientChoice) -> String {
        switch choice {
        case .account(let account, let kind):
            var text = (account.userName ?? "an account without a name").siteChosen
            if let display = account.userDisplayName, display != account.userName { text += " (\(display.siteChosen))" }
            text += kind == .platform ? ", on this computer" : ""
            if let created = account.created {
                text += ", created " + created.formatted(.iso8601.year().month().day())
            }
            return text
        case .thisComputer: return "This computer (the passkey store)"
        case .phone: return "Use a phone or tablet (shows a QR code)"
        case .securityKey: return "Use a security key"
        case .password(let login):
            return "\(login.userName.siteChosen), saved password for \(login.service.terminalSafe)"
        }
    }

    public func confirm(_ question: ClientQuestion) async -> Bool {
        let terminal = Terminal.shared
        switch question {
        case .revealSecurityKeyModel(let relyingPartyID):
            let text = "\(relyingPartyID.terminalSafe) wants to see the make and model of your security key."
            if unattended {
                terminal.write("passkey: auto-approved: \(text)\n")
                return true
            }
            terminal.write(text + " Allow? [y/N] ")
            guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)) else { return false }
            return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
        }
    }

    public func collectPIN(_ request: PINRequest) async -> String? { await pin(request) }

    public func notify(_ event: ClientEvent) async {
        switch event {
        case .contacting(.securityKey): Terminal.shared.write("passkey: opening the security key\n")
        case .contacting(.platform): Terminal.shared.write("passkey: using this computer's passkey store\n")
        case .contacting(.hybrid), .waitingForAuthenticator: break
        }
    }
}
