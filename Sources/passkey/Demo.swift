import Basics
import ArgumentParser
import Foundation
import PasskeyProvider
import QRImageIO
import TerminalIO
import WebAuthnClient
import Synchronization

extension Passkey {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Watch a cross-device passkey registration and sign-in, all on this machine.",
            discussion: """
                Starts a relay on a free loopback port and a simulated Bluetooth radio, then plays both parts: \
                the computer that shows a QR code (a browser with a relying party) and the phone that scans it \
                (this package's authenticator with a throw-away encrypted store). It registers a passkey, signs \
                in with it, and shows that the QR code alone, without the phone's advert nearby, gets nowhere. \
                The demo approves on the user's behalf, and says so.
                """
        )

        @Option(help: "Relying party ID.") var rp = "example.com"
        @Option(help: "Account name to register.") var user = "alice"
        @Flag(help: "Do not draw the QR code.") var noQR = false

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let clock = DemoClock()
            printLine("passkey demo: cross-device (hybrid) registration and sign-in, all on this machine")
            let noQR = noQR
            _ = try await HybridDemo(relyingPartyID: rp, userName: user).run(
                in: FileManager.default.temporaryDirectory, person: DemoPerson(clock: clock),
                checker: try SuffixListRelyingPartyIDChecker.fromSystemList(relatedOrigins: nil),
                tell: { line in
                    switch line {
                    case .act(let title): printLine("\n" + title)
                    case .step(let text): clock.step(text)
                    }
                },
                showQRCode: { url in if !noQR { Self.draw(url) } })
            printLine(
                "\nDone in \(clock.elapsed): 1 passkey registered and used over hybrid; the relay never saw a key.")
        }

        private static func draw(_ url: String) {
            guard let matrix = try? QRMatrix(encoding: url),
                let text = try? matrix.terminalText(
                    style: .preferred(environment: ProcessInfo.processInfo.environment, isTerminal: isatty(1) == 1))
            else { return }
            printQRCode(text.hasSuffix("\n") ? text : text + "\n")
        }
    }
}

/// The demo's person: the demo approves the phone's requests itself (`ReportingApproval`), so nobody is asked;
/// each approval is a step of the demo's output.
private struct DemoPerson: ProviderUserInterface {
    let clock: DemoClock

    func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> { .declined }
    func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> { .declined }
    func secret(_ request: SecretRequest) async -> PromptAnswer<String> { .declined }

    func report(_ event: ProviderEvent) {
        switch event {
        case .autoApproved(let action, let verification):
            let line = "phone: auto-approved: " + TerminalInterface.question(for: action)
            clock.step(verification ? line + " (user verification auto-approved)" : line)
        case .computer(.verifiedByRelyingParty):
            clock.step("relying party: response verified (WebAuthn L3 §7)")
        default:
            break
        }
    }
}

/// Prints each demo step with the time since the demo started.
final class DemoClock: Sendable {
    private let start = ContinuousClock.now
    private let lock = Mutex(())

    var elapsed: String { Self.format(ContinuousClock.now - start) }

    func step(_ text: String) {
        let line = "   [\(Self.format(ContinuousClock.now - start))] \(text)"
        lock.withLock { _ in printLine(line) }
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%6.3f s", duration.inSeconds)
    }
}
