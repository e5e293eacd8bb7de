import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import PasskeyStoreIO
import ProximityIO
import RelyingParty
import RelayIO
import WebAuthnClient
import WebAuthnClientDriver
import WebRelyingParty

/// `passkey demo`: a cross-device registration and sign-in with every part on this machine, told step by step.
///
/// A relay on a free loopback port (`passkey-relay`'s server, in process), a simulated Bluetooth radio, a phone (this
/// package's authenticator over a throw-away encrypted store whose passphrase lives only in memory, approving on the
/// person's behalf) and a computer (the WebAuthn engine a person's `passkey client` uses, with a relying party in
/// process). Three acts: registration, a discoverable sign-in, and the same sign-in with the phone out of radio range,
/// which must fail: the QR code alone gets nowhere.
public struct HybridDemo: Sendable {
    public var relyingPartyID: String
    public var userName: String
    /// How long the far-away sign-in waits for an advert before it gives up.
    public var farAwayTimeout: Duration

    /// One line of the demo's story: an act's title, or a step within it.
    public enum Line: Hashable, Sendable {
        case act(String)
        case step(String)
    }

    /// What the three acts showed.
    public struct Outcome: Sendable {
        public var registeredCredentialID: [UInt8]
        public var signedInUser: String
        public var userVerified: Bool
        /// Why the sign-in without the phone's advert failed.
        public var farAwayError: ClientError
        /// The relay's tunnel and byte counters (`relay_tunnels_paired_total`, `relay_bytes_relayed_total`).
        public var relayCounters: [String]
    }

    public init(relyingPartyID: String, userName: String, farAwayTimeout: Duration = .seconds(2)) {
        self.relyingPartyID = relyingPartyID
        self.userName = userName
        self.farAwayTimeout = farAwayTimeout
    }

    /// Runs the demo in a scratch directory it removes afterwards. Each act and step is told to `tell`; each QR
    /// code the computer shows goes to `showQRCode` too; `person` hears the phone's and the relying party's reports
    /// (the demo approves for it, and asks it nothing).
    public func run(
        in scratch: URL, person: any ProviderUserInterface, checker: any RelyingPartyIDChecker,
        tell: @escaping @Sendable (Line) -> Void,
        showQRCode: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> Outcome {
        let step: @Sendable (String) -> Void = { tell(.step($0)) }
        let directory = scratch.appendingPathComponent("passkey-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var relayConfiguration = RelayServerConfiguration()
        relayConfiguration.port = 0
        relayConfiguration.threads = 1
        var relayLogger = Logger(label: "passkey.demo.relay")
        relayLogger.logLevel = .error
        let relay = try await RelayServer.start(relayConfiguration, logger: relayLogger)
        defer { Task { await relay.shutdown() } }
        let tunnelServer = try TunnelServerBaseURL(string: relay.baseURL)
        step("relay listening on \(relay.baseURL) (passkey-relay, in process)")

        let passphrase = AuthenticatorEnvironment.systemRandomBytes(24).base64URLEncodedString
        let store = try SQLiteCredentialStore.create(
            at: directory.appendingPathComponent("phone.sqlite"), passphrase: passphrase, kdf: .testing)
        defer { store.close() }
        // One request per QR code, and user verification for each, approved by the demo.
        let authenticator = Authenticator(
            configuration: .hybridPhone(oneRequestPerSession: true),
            environment: AuthenticatorEnvironment(store: store, userInteraction: ReportingApproval(interface: person)))
        step("phone: authenticator AAGUID \(authenticator.configuration.aaguid), encrypted store phone.sqlite")
        step("approvals: unattended, the demo answers the phone's prompts itself")

        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        defer { Task { await scanner.close() } }
        step("simulated Bluetooth radio on udp://127.0.0.1:\(scanner.port) (Docs/Proximity.md)")
        let relyingParty = LocalRelyingParty(
            relyingPartyID: relyingPartyID, state: .file(directory.appendingPathComponent("rp-state.json")),
            interface: person, random: AuthenticatorEnvironment.systemRandomBytes)
        step("computer: this package's WebAuthn client, as `passkey client register` and `sign-in` run it")
        let computer = DemoComputer(
            step: step, showQRCode: showQRCode, relay: tunnelServer, scanner: scanner, authenticator: authenticator,
            checker: checker)
        let nearby = scanner.port

        tell(.act("1. Registration of \(userName) at \(relyingPartyID)"))
        let registration = try await computer.ceremony(radio: nearby, showingQRCode: true) { engine in
            try await relyingParty.register(user: userName, displayName: userName.capitalized, makeEngine: engine)
        }
        step(
            "registered: credential \(registration.credential.id.base64URLEncodedString.prefix(16))…, "
                + "ES256 public key stored by the RP, private key sealed in the phone's store")

        tell(.act("2. Sign-in at \(relyingPartyID) (discoverable: the phone picks the account)"))
        let signIn = try await computer.ceremony(radio: nearby, showingQRCode: false) { engine in
            try await relyingParty.signIn(user: nil, makeEngine: engine)
        }
        step("signed in as \(signIn.userName): signature verified, user verified \(signIn.userVerified)")

        tell(.act("3. A QR code seen from afar (mailed, or on a fake site): the advert never reaches the computer"))
        let farAway = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        defer { Task { await farAway.close() } }
        let farError: ClientError
        do {
            _ = try await computer.ceremony(
                radio: farAway.port, showingQRCode: false,
                timeout: farAwayTimeout
            ) { engine in try await relyingParty.signIn(user: nil, makeEngine: engine) }
            throw HybridDemoError.signedInWithoutTheAdvert
        } catch let error as ClientError {
            farError = error
        }
        step("computer: \(farError)")
        let counters = relay.metricsText().split(separator: "\n").map(String.init).filter {
            $0.hasPrefix("relay_tunnels_paired_total") || $0.hasPrefix("relay_bytes_relayed_total")
        }.sorted()
        step("relay saw only ciphertext: \(counters.joined(separator: ", "))")
        return Outcome(
            registeredCredentialID: registration.credential.id, signedInUser: signIn.userName,
            userVerified: signIn.userVerified, farAwayError: farError, relayCounters: counters)
    }
}

/// The demo found a bug: the sign-in with the phone out of radio range succeeded.
public enum HybridDemoError: Error, CustomStringConvertible {
    case signedInWithoutTheAdvert

    public var description: String { "the sign-in succeeded without the phone's advert: this is a bug" }
}

/// The demo's computer: the WebAuthn engine whose one authenticator is a phone over hybrid; the demo's phone
/// (`NearbyPhone`) scans every QR code it shows and advertises on the radio it is given.
private struct DemoComputer {
    let step: @Sendable (String) -> Void
    let showQRCode: @Sendable (String) -> Void
    let relay: TunnelServerBaseURL
    let scanner: SimulatedScanner
    let authenticator: Authenticator
    let checker: any RelyingPartyIDChecker

    /// One ceremony: the computer shows a QR code, and the phone, advertising to the simulated radio on port `radio`,
    /// scans it at once.
    func ceremony<T: Sendable>(
        radio: Int, showingQRCode: Bool, timeout: Duration = .seconds(30),
        _ body: (_ makeEngine: () throws -> ClientEngine) async throws -> T
    ) async throws -> T {
        let (step, showQRCode) = (step, self.showQRCode)
        let advertiser = try await SimulatedRadio.advertiser(
            host: "127.0.0.1", port: radio, interval: .milliseconds(20))
        defer { Task { await advertiser.close() } }
        let phone = NearbyPhone(
            link: HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
                environment: .system(),
                progress: { event in
                    switch event {
                    case .connecting: step("phone: QR code scanned; registering a tunnel with the relay")
                    case .advertising(let routingID):
                        step("phone: advertising the encrypted routing ID \(routingID) over Bluetooth")
                    case .handshakeDone: step("phone: handshake answered")
                    case .requestReceived(let command): step("phone: request \(CTAPCommand(rawValue: command).name)")
                    case .responseSent: step("phone: answer sent; closing the tunnel")
                    }
                }),
            authenticator: authenticator, onFailure: { error in step("phone: \(error)") })
        return try await phone.withClient(
            scanner: scanner, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
            relyingPartyIDChecker: checker,
            progress: { event in
                switch event {
                case .showQRCode(let url):
                    if showingQRCode { showQRCode(url) }
                    step("computer: QR code shown: \(url.prefix(40))… (\(url.count) characters)")
                case .advertSeen(let routingID, _):
                    step("computer: advert decrypted with the QR secret: routing ID \(routingID)")
                case .tunnelConnected: step("computer: tunnel connected through the relay")
                case .handshakeDone: step("computer: Noise handshake done, getInfo received (end-to-end encrypted)")
                case .requestSent(let command):
                    step("computer: → \(CTAPCommand(rawValue: command).name) with a browser-built clientDataJSON")
                case .responseReceived: step("computer: ← answer received")
                case .contacting, .linkedPhoneNear: break  // linked sessions only
                }
            }
        ) { engine in try await body { engine } }
    }
}
