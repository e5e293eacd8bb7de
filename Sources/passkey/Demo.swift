import Basics
import ArgumentParser
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import ProximityIO
import QRImageIO
import RelayIO
import RelyingParty
import TerminalIO
import WebAuthnClient
import WebAuthnClientDriver
import WebRelyingParty
import Synchronization
import WebAuthn

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

        func run() async throws {
            let clock = DemoClock()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "passkey-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }

            print("passkey demo: cross-device (hybrid) registration and sign-in, all on this machine")
            // The relay: the real tunnel protocol on a free loopback port.
            var relayConfiguration = RelayServerConfiguration()
            relayConfiguration.port = 0
            relayConfiguration.threads = 1
            var relayLogger = Logger(label: "passkey.demo.relay")
            relayLogger.logLevel = .error
            let relay = try await RelayServer.start(relayConfiguration, logger: relayLogger)
            defer { Task { await relay.shutdown() } }
            let tunnelServer = try TunnelServerBaseURL(string: relay.baseURL)
            clock.step("relay listening on \(relay.baseURL) (passkey-relay, in process)")

            // The phone: an encrypted store with a passphrase that lives only in memory.
            let passphrase = AuthenticatorEnvironment.systemRandomBytes(24).base64URLEncodedString
            let store = try SQLiteCredentialStore.create(
                at: directory.appendingPathComponent("phone.sqlite"), passphrase: passphrase, kdf: .testing)
            defer { store.close() }
            // The phone answers one request per QR code and verifies the user for each (approved by the demo).
            let authenticator = Authenticator(
                configuration: .hybridPhone(oneRequestPerSession: true),
                environment: AuthenticatorEnvironment(
                    store: store,
                    userInteraction: ReportingApproval(interface: DemoPerson(clock: clock))))
            clock.step(
                "phone: authenticator AAGUID \(authenticator.configuration.aaguid), encrypted store \(store.url.lastPathComponent)"
            )
            clock.step("approvals: unattended, the demo answers the phone's prompts itself")

            // The radio: the computer scans a UDP port; the phone advertises to it.
            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let radio = ProximityMode.simulated(host: "127.0.0.1", port: scanner.port)
            clock.step("simulated Bluetooth radio on udp://127.0.0.1:\(scanner.port) (Docs/Proximity.md)")
            let relyingParty = LocalRelyingParty(
                relyingPartyID: rp, state: .file(directory.appendingPathComponent("rp-state.json")),
                interface: DemoPerson(clock: clock), random: AuthenticatorEnvironment.systemRandomBytes)
            let checker = try SuffixListRelyingPartyIDChecker.fromSystemList(relatedOrigins: nil)
            clock.step("computer: this package's WebAuthn client, as `passkey client register` and `sign-in` run it")
            let computer = Computer(
                clock: clock, relay: tunnelServer, scanner: scanner, authenticator: authenticator, checker: checker)

            // 1. Registration.
            print("\n1. Registration of \(user) at \(rp)")
            let registration = try await computer.ceremony(radio: radio, showQR: !noQR) { engine in
                try await relyingParty.register(user: user, displayName: user.capitalized, makeEngine: engine)
            }
            clock.step(
                "registered: credential \(registration.credential.id.base64URLEncodedString.prefix(16))…, "
                    + "ES256 public key stored by the RP, private key sealed in the phone's store")

            // 2. Sign-in, discoverable: no allowList, the phone offers its account.
            print("\n2. Sign-in at \(rp) (discoverable: the phone picks the account)")
            let signIn = try await computer.ceremony(radio: radio, showQR: false) { engine in
                try await relyingParty.signIn(user: nil, makeEngine: engine)
            }
            clock.step("signed in as \(signIn.userName): signature verified, user verified \(signIn.userVerified)")

            // 3. The same QR flow, but the phone is out of radio range: it cannot help the computer.
            print("\n3. A QR code seen from afar (mailed, or on a fake site): the advert never reaches the computer")
            let farAway = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let farRadio = ProximityMode.simulated(host: "127.0.0.1", port: farAway.port)
            do {
                _ = try await computer.ceremony(radio: farRadio, showQR: false, timeout: .seconds(2)) { engine in
                    try await relyingParty.signIn(user: nil, makeEngine: engine)
                }
                throw CommandFailure("the sign-in succeeded without the advert: this is a bug")
            } catch let error as ClientError {
                clock.step("computer: \(error)")
            }
            await farAway.close()
            await scanner.close()
            let metrics = relay.metricsText().split(separator: "\n").filter {
                $0.hasPrefix("relay_tunnels_paired_total") || $0.hasPrefix("relay_bytes_relayed_total")
            }.sorted()
            clock.step("relay saw only ciphertext: \(metrics.joined(separator: ", "))")
            print("\nDone in \(clock.elapsed): 1 passkey registered and used over hybrid; the relay never saw a key.")
        }
    }
}

/// The demo's computer: the WebAuthn engine a person's `passkey client` uses, whose one authenticator is a phone
/// over hybrid; the demo's phone (`NearbyPhone`) scans every QR code it shows.
private struct Computer {
    let clock: DemoClock
    let relay: TunnelServerBaseURL
    let scanner: SimulatedScanner
    let authenticator: Authenticator
    let checker: SuffixListRelyingPartyIDChecker

    /// One ceremony: the computer shows a QR code, the phone advertising on `radio` scans it at once, both meet.
    func ceremony<T: Sendable>(
        radio: ProximityMode, showQR: Bool, timeout: Duration = .seconds(30),
        _ body: (_ makeEngine: () throws -> ClientEngine) async throws -> T
    ) async throws -> T {
        let clock = clock
        let advertiser = try await Radio.advertiser(for: radio, interval: .milliseconds(20))
        defer { Task { await advertiser.close() } }
        let phone = NearbyPhone(
            link: HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
                environment: .system(),
                progress: { event in
                    switch event {
                    case .connecting: clock.step("phone: QR code scanned; registering a tunnel with the relay")
                    case .advertising(let routingID):
                        clock.step("phone: advertising the encrypted routing ID \(routingID) over Bluetooth")
                    case .handshakeDone: clock.step("phone: handshake answered")
                    case .requestReceived(let command):
                        clock.step("phone: request \(CTAPCommand(rawValue: command).name)")
                    case .responseSent: clock.step("phone: answer sent; closing the tunnel")
                    }
                }),
            authenticator: authenticator, onFailure: { error in clock.step("phone: \(error)") })
        return try await phone.withClient(
            scanner: scanner, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
            relyingPartyIDChecker: checker,
            progress: { event in
                switch event {
                case .showQRCode(let url):
                    if showQR { Self.draw(url) }
                    clock.step("computer: QR code shown: \(url.prefix(40))… (\(url.count) characters)")
                case .advertSeen(let routingID, _):
                    clock.step("computer: advert decrypted with the QR secret: routing ID \(routingID)")
                case .tunnelConnected:
                    clock.step("computer: tunnel connected through the relay")
                case .handshakeDone:
                    clock.step("computer: Noise handshake done, getInfo received (end-to-end encrypted)")
                case .requestSent(let command):
                    clock.step("computer: → \(CTAPCommand(rawValue: command).name) with a browser-built clientDataJSON")
                case .responseReceived:
                    clock.step("computer: ← answer received")
                case .contacting, .linkedPhoneNear:
                    break  // linked sessions only
                }
            }
        ) { engine in try await body { engine } }
    }

    private static func draw(_ url: String) {
        guard let matrix = try? QRMatrix(encoding: url),
            let text = try? matrix.terminalText(
                style: .preferred(environment: ProcessInfo.processInfo.environment, isTerminal: isatty(1) == 1))
        else { return }
        print(text.hasSuffix("\n") ? text : text + "\n", terminator: "")
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
        lock.withLock { _ in print(line) }
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%6.3f s", duration.inSeconds)
    }
}
