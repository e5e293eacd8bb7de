import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import Proximity
import ProximityIO
import PublicSuffix
import Relay
import RelayIO
import RelyingParty
import Synchronization
import Testing
import WebAuthnClient
import WebAuthnClientDriver
import WebRelyingParty

/// Cross-device registration and sign-in end to end, in process: a real relay on loopback, the simulated radio,
/// the computer as `passkey client` is one (the WebAuthn engine with a phone over hybrid, and this package's web
/// relying party), and the phone with this package's CTAP2 authenticator. Every answer is verified by the relying
/// party.
@Suite(.serialized)
struct CrossDeviceScenarioTests {
    @Test func registrationThenSignIn() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            let registration = try await Pair(relay: relay, phone: phone).register("alice", state: &state)
            #expect(registration.userName == "alice")
            #expect(registration.userVerified)
            #expect(state.accounts(for: "example.com").count == 1)
            #expect(phone.store.credentialCount == 1)

            let signIn = try await Pair(relay: relay, phone: phone).signIn(state: &state)
            #expect(signIn.userName == "alice")
            #expect(signIn.credentialID == registration.credential.id)
            #expect(signIn.userVerified)
            let metrics = relay.metricsText()
            #expect(metrics.contains("relay_tunnels_paired_total 2"))
            #expect(metrics.contains("relay_tunnels_closed_total{outcome=\"completed\"} 2"))
        }
    }

    /// The WebAuthn prf extension in the client role: hmac-secret at registration, and at sign-in a
    /// getKeyAgreement then the assertion, both in one hybrid session (so the phone keeps it open).
    @Test func prfOverHybrid() async throws {
        try await withRelay { relay in
            let phone = Phone(keepOpen: true)
            var state = RelyingPartyState()
            let registration = try await Pair(relay: relay, phone: phone).register("alice", prf: true, state: &state)
            #expect(registration.prfEnabled == true)
            let first = try await Pair(relay: relay, phone: phone).signIn(prf: Array("salt one".utf8), state: &state)
            let again = try await Pair(relay: relay, phone: phone).signIn(prf: Array("salt one".utf8), state: &state)
            let other = try await Pair(relay: relay, phone: phone).signIn(prf: Array("salt two".utf8), state: &state)
            let none = try await Pair(relay: relay, phone: phone).signIn(state: &state)
            #expect(first.prfFirst?.count == 32)
            #expect(first.prfFirst == again.prfFirst)
            #expect(first.prfFirst != other.prfFirst)
            #expect(none.prfFirst == nil)
            #expect(first.userVerified)
        }
    }

    /// A phone that answers one request per QR code cannot serve prf's key agreement, so its getInfo offers no
    /// PIN/UV protocol; the engine then does not ask it for the PRF, as a browser does: the sign-in succeeds and
    /// carries no PRF result (and `prf: {}` is still reported, empty).
    @Test func prfNeedsAPhoneThatKeepsTheSessionOpen() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            _ = try await Pair(relay: relay, phone: phone).register("alice", prf: true, state: &state)
            let signIn = try await Pair(relay: relay, phone: phone).signIn(prf: [1], state: &state)
            #expect(signIn.userName == "alice")
            #expect(signIn.prfFirst == nil)
            #expect(relay.metricsText().contains("relay_tunnels_closed_total{outcome=\"completed\"} 2"))
        }
    }

    @Test func registeringTheSameAccountTwiceIsExcludedAndChangesNothing() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            _ = try await Pair(relay: relay, phone: phone).register("alice", state: &state)
            let before = state
            do {
                _ = try await Pair(relay: relay, phone: phone).register("alice", state: &state)
                Issue.record("a second passkey for alice was made despite excludeCredentials")
            } catch let error as ClientError {
                #expect(error.reason == .authenticator(.credentialExcluded))
                #expect(error.name == .invalidStateError)
            }
            #expect(state == before)
            #expect(phone.store.credentialCount == 1)
        }
    }

    @Test func discoverableSignInWithTwoAccountsUsesTheOneChosenOnThePhone() async throws {
        try await withRelay { relay in
            // The phone's chooser picks the second account it lists.
            let phone = Phone(chooseAccount: 1)
            var state = RelyingPartyState()
            _ = try await Pair(relay: relay, phone: phone).register("alice", state: &state)
            _ = try await Pair(relay: relay, phone: phone).register("bob", state: &state)
            #expect(state.accounts(for: "example.com").map(\.userName) == ["alice", "bob"])
            let signIn = try await Pair(relay: relay, phone: phone).signIn(state: &state)
            let offered = try #require(phone.interaction.lastAccounts)
            #expect(offered.count == 2)
            #expect(signIn.userName == offered[1].userName)
        }
    }

    @Test func allowListSignInUsesTheNamedAccount() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            _ = try await Pair(relay: relay, phone: phone).register("alice", state: &state)
            let bob = try await Pair(relay: relay, phone: phone).register("bob", state: &state)
            for _ in 0..<2 {
                let signIn = try await Pair(relay: relay, phone: phone).signIn(userName: "bob", state: &state)
                #expect(signIn.userName == "bob")
                #expect(signIn.credentialID == bob.credential.id)
            }
            // With an allowList the phone is not asked to choose.
            #expect(phone.interaction.lastChooseOnAuthenticator == false)
        }
    }

    /// A QR code seen from afar (mailed, or on a fake site): the attacker's phone scans it and registers its
    /// tunnel, but the computer cannot hear its advert, so it never connects and the attempt times out.
    @Test func qrCodeWithoutANearbyAdvertTimesOutAndNeverReachesTheConnectPath() async throws {
        try await withRelay { relay in
            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let farAway = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)  // the attacker's radio range
            let (qrCodes, shown) = AsyncStream.makeStream(of: String.self)
            let computer = Computer(
                scanner: scanner, relayURL: try TunnelServerBaseURL(string: relay.baseURL), timeout: .seconds(1),
                progress: { event in
                    if case .showQRCode(let url) = event { shown.yield(url) }
                })
            let phone = Phone()
            let attackerAdvertiser = try await SimulatedRadio.advertiser(
                host: "127.0.0.1", port: farAway.port, interval: .milliseconds(20))
            var state = RelyingPartyState()
            async let attacker: Int = {
                var shownCodes = qrCodes.makeAsyncIterator()
                let payload = try QRCodePayload(url: await shownCodes.next() ?? "")
                return try await phone.service(relay: relay, advertiser: attackerAdvertiser, timeout: .seconds(2))
                    .serve(qrCode: payload, authenticator: phone.authenticator)
            }()
            do {
                _ = try await computer.register("alice", state: &state)
                Issue.record("registered without a nearby authenticator")
            } catch let error as ClientError {
                guard case .transport(let why) = error.reason else { throw error }
                #expect(why.hasPrefix("no nearby authenticator answered within 1 s"))
            }
            do {
                _ = try await attacker
                Issue.record("the attacker's session completed")
            } catch let error as HybridLinkError {
                guard case .session(.clientNeverConnected) = error else { throw error }
            }
            let metrics = relay.metricsText()
            #expect(metrics.contains("relay_tunnels_opened_total 1"), "the attacker's phone did reach the relay")
            #expect(metrics.contains("relay_tunnels_paired_total 0"), "the computer never connected")
            #expect(metrics.contains("relay_rejections_total{reason=\"unknownTunnel\"} 0"))
            #expect(state.accounts.isEmpty)
            #expect(phone.store.credentialCount == 0)
            await attackerAdvertiser.close()
            await scanner.close()
            await farAway.close()
        }
    }

    @Test func wrongOriginOrRPIDIsRefusedBeforeAnything() async throws {
        try await withRelay { relay in
            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let started = Box(false)
            let cases: [(rp: String, origin: String, refusal: DOMExceptionName)] = [
                ("example.com", "https://evil.example", .securityError),
                ("example.com", "http://example.com", .securityError),
                ("login.example.com", "https://example.com", .securityError),
                ("com", "https://example.com", .securityError),
                ("example.com", "not a url", .securityError),
            ]
            let computer = Computer(
                scanner: scanner, relayURL: try TunnelServerBaseURL(string: relay.baseURL), timeout: .seconds(1),
                progress: { _ in started.set(true) })
            var relyingParty = WebRelyingParty(
                configuration: .init(
                    relyingParty: RelyingPartyEntity(id: "example.com"), origins: ["https://example.com"]))
            for (rp, origin, refusal) in cases {
                var options = try PublicKeyCredentialCreationOptions(
                    json: relyingParty.registrationOptions(
                        for: RegistrationOptionsRequest(userName: "alice"), state: RelyingPartyState(),
                        challenge: randomBytes(32), newUserHandle: randomBytes(16), now: .now))
                options.relyingParty.id = rp
                do {
                    _ = try await computer.engine().create(options, origin: origin)
                    Issue.record("\(rp) from \(origin) was accepted")
                } catch let error as ClientError {
                    #expect(error.name == refusal, "\(rp) from \(origin): \(error)")
                }
            }
            // A subdomain origin for a parent RP ID is what browsers allow; a page's URL stands for its origin.
            let checker = Computer.relyingPartyIDChecker
            #expect(
                try await checker.check(origin: "https://login.example.com:8443", requested: "example.com")
                    == RelyingPartyIDDecision(origin: "https://login.example.com:8443", relyingPartyID: "example.com"))
            #expect(
                try await checker.check(origin: "https://example.com/path", requested: "example.com")
                    == RelyingPartyIDDecision(origin: "https://example.com", relyingPartyID: "example.com"))
            #expect(started.value == false)
            #expect(relay.metricsText().contains("relay_connections_total 0"))
            await scanner.close()
        }
    }

    @Test func relayFlippingOneByteTowardsTheClientMakesTheClientAbortAndNothingIsStored() async throws {
        try await withRelay { relay in
            // Relay to client: byte 10 of the second message (the encrypted post-handshake message).
            let proxy = try await TamperingProxy(upstreamPort: relay.port, direction: .towardsClient, message: 2)
            let phone = Phone()
            var state = RelyingPartyState()
            do {
                _ = try await Pair(relay: relay, phone: phone, clientRelayURL: proxy.url).register(
                    "alice", state: &state)
                Issue.record("registered through a tampering relay")
            } catch let error as ClientError {
                guard case .transport(let why) = error.reason else { throw error }
                #expect(why.hasPrefix("hybrid message rejected"), "expected a decrypt error, got \(why)")
            }
            #expect(proxy.flipped)
            #expect(state.accounts.isEmpty)
            #expect(phone.store.credentialCount == 0)
            await proxy.close()
        }
    }

    @Test func relayFlippingOneByteTowardsThePhoneMakesThePhoneAbortAndNothingIsStored() async throws {
        try await withRelay { relay in
            // Client to relay: the second message is the encrypted makeCredential request.
            let proxy = try await TamperingProxy(upstreamPort: relay.port, direction: .fromClient, message: 2)
            let phone = Phone()
            var state = RelyingPartyState()
            let phoneError = ErrorBox()
            do {
                _ = try await Pair(relay: relay, phone: phone, clientRelayURL: proxy.url, phoneError: phoneError)
                    .register("alice", state: &state)
                Issue.record("registered through a tampering relay")
            } catch let error as ClientError {
                guard case .transport = error.reason else { throw error }
            }
            let error = try #require(phoneError.error as? HybridLinkError)
            guard case .session(.crypter) = error else {
                Issue.record("expected a decrypt error on the phone, got \(error)")
                throw error
            }
            #expect(proxy.flipped)
            #expect(state.accounts.isEmpty)
            #expect(phone.store.credentialCount == 0)
            await proxy.close()
        }
    }

    @Test func relayThatNeverPairsTimesOutOnBothSides() async throws {
        // A "relay" that accepts both upgrades (with a routing ID) and then relays nothing.
        var script = ScriptedWebSocketServer.Script()
        script.extraHeaders = ["X-caBLE-Routing-ID: 010203"]
        let blackHole = try await ScriptedWebSocketServer(script: script)
        let phone = Phone()
        var state = RelyingPartyState()
        let phoneError = ErrorBox()
        let started = ContinuousClock.now
        do {
            _ = try await Pair(
                relayURL: blackHole.url, phone: phone, timeout: .milliseconds(500), phoneError: phoneError
            ).register("alice", state: &state)
            Issue.record("registered through a relay that relays nothing")
        } catch let error as ClientError {
            #expect(error.reason == .transport("timed out waiting for the authenticator's handshake (0.5 s)"))
            #expect(
                HybridLinkError.session(.timedOut(.handshake, timeout: .milliseconds(500))).description
                    == "timed out waiting for the authenticator's handshake (0.5 s)")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        let error = try #require(phoneError.error as? HybridLinkError)
        #expect(error == .session(.clientNeverConnected(timeout: .milliseconds(500))))
        #expect(state.accounts.isEmpty)
        await blackHole.close()
    }

    @Test func twoHundredConcurrentSignInsThroughOneRelay() async throws {
        var limits = RelayLimits()
        limits.maximumConnectionsPerAddress = 1000
        try await withRelay(limits: limits) { relay in
            let count = 200
            let phones = (0..<count).map { _ in Phone() }
            let states = try await withThrowingTaskGroup(of: (Int, RelyingPartyState).self) { group in
                for index in 0..<count {
                    group.addTask {
                        var state = RelyingPartyState()
                        _ = try await Pair(relay: relay, phone: phones[index]).register("user\(index)", state: &state)
                        return (index, state)
                    }
                }
                var states = [RelyingPartyState](repeating: RelyingPartyState(), count: count)
                for try await (index, state) in group { states[index] = state }
                return states
            }
            let names = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<count {
                    group.addTask {
                        var state = states[index]
                        return try await Pair(relay: relay, phone: phones[index]).signIn(state: &state).userName
                    }
                }
                var names: Set<String> = []
                for try await name in group { names.insert(name ?? "") }
                return names
            }
            #expect(names == Set((0..<count).map { "user\($0)" }))
            #expect(relay.metricsText().contains("relay_tunnels_paired_total \(2 * count)"))
        }
    }

    /// An advert left over from an earlier session keeps arriving; the new session ignores it and pairs
    /// with the advert for its own QR code.
    @Test func staleAdvertFromAnEarlierSessionIsIgnored() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            let recorder = RecordingAdvertiser()
            _ = try await Pair(relay: relay, phone: phone, advertiserWrapper: recorder).register("alice", state: &state)
            let stale = try #require(recorder.last)

            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let staleAdvertiser = try await SimulatedRadio.advertiser(
                host: "127.0.0.1", port: scanner.port, interval: .milliseconds(5))
            try await staleAdvertiser.startAdvertising(stale)
            let seenRoutingIDs = Box<[RoutingID]>([])
            let signIn = try await Pair(
                relay: relay, phone: phone, advertiserWrapper: recorder, scanner: scanner,
                phoneDelay: .milliseconds(200),
                onAdvertSeen: { routingID in seenRoutingIDs.update { $0.append(routingID) } }
            ).signIn(state: &state)
            #expect(signIn.userName == "alice")
            #expect(seenRoutingIDs.value.count == 1)
            #expect(seenRoutingIDs.value.first == recorder.routingIDs.last)
            #expect(recorder.routingIDs.count == 2)
            await staleAdvertiser.close()
            await scanner.close()
        }
    }
}

// MARK: - Fixtures

/// Runs `body` with a relay on a free loopback port.
func withRelay(
    limits: RelayLimits = RelayLimits(), _ body: (RelayServer) async throws -> Void
) async throws {
    var configuration = RelayServerConfiguration()
    configuration.port = 0
    configuration.limits = limits
    configuration.threads = 1
    var logger = Logger(label: "test.relay")
    logger.logLevel = .critical
    let relay = try await RelayServer.start(configuration, logger: logger)
    do {
        try await body(relay)
        await relay.shutdown()
    } catch {
        await relay.shutdown()
        throw error
    }
}

/// A phone as `passkey scan` is one (`AuthenticatorConfiguration.hybridPhone`): a CTAP2 authenticator with its own
/// in-memory store and an interaction that approves, verifies, and picks account `chooseAccount` when it shows a
/// chooser.
struct Phone: Sendable {
    let store = InMemoryCredentialStore()
    let interaction: ChoosingInteraction
    let authenticator: Authenticator
    /// Serve every request of a session (`passkey scan --keep-open`), not only the first.
    var keepOpen = false

    init(chooseAccount: Int? = nil, keepOpen: Bool = false) {
        self.keepOpen = keepOpen
        interaction = ChoosingInteraction(choice: chooseAccount)
        authenticator = Authenticator(
            configuration: .hybridPhone(oneRequestPerSession: !keepOpen),
            environment: AuthenticatorEnvironment(store: store, userInteraction: interaction))
    }

    func service(
        relay: RelayServer, advertiser: any ProximityAdvertiser, timeout: Duration = .seconds(10),
        relayURL: String? = nil
    ) throws -> HybridAuthenticatorLink {
        HybridAuthenticatorLink(
            advertiser: advertiser, tunnelServer: try TunnelServerBaseURL(string: relayURL ?? relay.baseURL),
            timeouts: HybridTimeouts(all: timeout), keepOpen: keepOpen, environment: .system())
    }
}

final class ChoosingInteraction: UserInteraction {
    let choice: Int?
    private let seen = Mutex<(accounts: [AccountSummary]?, chooser: Bool?)>((nil, nil))

    init(choice: Int?) { self.choice = choice }

    var lastAccounts: [AccountSummary]? { seen.withLock { $0.accounts } }
    var lastChooseOnAuthenticator: Bool? { seen.withLock { $0.chooser } }

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        if case .getAssertion(_, let accounts, let chooser) = request.action {
            seen.withLock { $0 = (accounts, chooser) }
            return .approved(userVerified: request.requiresVerification, selectedAccount: chooser ? choice : nil)
        }
        return .approved(userVerified: request.requiresVerification, selectedAccount: nil)
    }
}

extension InMemoryCredentialStore {
    var credentialCount: Int { (try? allCredentials().count) ?? -1 }
}

/// Where the phone's error lands when a test wants to look at it.
final class ErrorBox: Sendable {
    private let value = Mutex<(any Error)?>(nil)
    var error: (any Error)? { value.withLock { $0 } }
    func set(_ error: any Error) { value.withLock { $0 = error } }
}

/// One computer and one phone in radio range of each other, for one ceremony: the phone scans the QR code
/// as soon as the computer shows it, and advertises to the computer's scanner.
struct Pair {
    var relayURL: String
    var clientRelayURL: String?
    var phone: Phone
    var timeout: Duration = .seconds(10)
    var phoneError: ErrorBox?
    var advertiserWrapper: RecordingAdvertiser?
    var scanner: (any ProximityScanner)?
    var scannerPort: Int?
    var phoneDelay: Duration = .zero
    var onAdvertSeen: (@Sendable (RoutingID) -> Void)?

    init(
        relay: RelayServer? = nil, relayURL: String? = nil, phone: Phone, clientRelayURL: String? = nil,
        timeout: Duration = .seconds(10), phoneError: ErrorBox? = nil,
        advertiserWrapper: RecordingAdvertiser? = nil, scanner: SimulatedScanner? = nil,
        phoneDelay: Duration = .zero, onAdvertSeen: (@Sendable (RoutingID) -> Void)? = nil
    ) {
        self.relayURL = relayURL ?? relay!.baseURL
        self.clientRelayURL = clientRelayURL
        self.phone = phone
        self.timeout = timeout
        self.phoneError = phoneError
        self.advertiserWrapper = advertiserWrapper
        self.scanner = scanner
        self.scannerPort = scanner?.port
        self.phoneDelay = phoneDelay
        self.onAdvertSeen = onAdvertSeen
    }

    func register(_ userName: String, prf: Bool = false, state: inout RelyingPartyState) async throws -> Registered {
        try await run { computer in try await computer.register(userName, prf: prf, state: &state) }
    }

    func signIn(userName: String? = nil, prf: [UInt8]? = nil, state: inout RelyingPartyState) async throws -> SignedIn {
        try await run { computer in try await computer.signIn(userName: userName, prf: prf, state: &state) }
    }

    /// Runs `body` with the computer, while the phone (advertising to the computer's scanner) scans every QR code
    /// it shows.
    private func run<T: Sendable>(_ body: (Computer) async throws -> T) async throws -> T {
        let ownScanner = scanner == nil ? try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0) : nil
        let scanner: any ProximityScanner = self.scanner ?? ownScanner!
        let port = scannerPort ?? ownScanner!.port
        let radio = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: port, interval: .milliseconds(20))
        let advertiser: any ProximityAdvertiser = advertiserWrapper.map { $0.wrapping(radio) } ?? radio
        let phoneError = phoneError
        let nearby = NearbyPhone(
            link: HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: try TunnelServerBaseURL(string: relayURL),
                timeouts: HybridTimeouts(all: timeout), keepOpen: phone.keepOpen, environment: .system(),
                progress: { [advertiserWrapper] event in
                    if case .advertising(let routingID) = event { advertiserWrapper?.record(routingID) }
                }),
            authenticator: phone.authenticator, scanDelay: phoneDelay, onFailure: { phoneError?.set($0) })
        let clientRelayURL = try TunnelServerBaseURL(string: clientRelayURL ?? relayURL)
        let (timeout, onAdvertSeen) = (timeout, onAdvertSeen)
        let result: Result<T, any Error>
        do {
            result = .success(
                try await nearby.watching { show in
                    try await body(
                        Computer(
                            scanner: SharedScanner(scanner), relayURL: clientRelayURL, timeout: timeout,
                            progress: { event in
                                switch event {
                                case .showQRCode(let url): show(url)
                                case .advertSeen(let routingID, _): onAdvertSeen?(routingID)
                                default: break
                                }
                            }))
                })
        } catch {
            result = .failure(error)
        }
        await radio.close()
        await ownScanner?.close()
        return try result.get()
    }
}

/// What a verified registration gave the relying party, and the prf extension's `enabled` output.
struct Registered {
    var userName: String
    var userVerified: Bool
    var credential: CredentialRecord
    var prfEnabled: Bool?
}

/// What a verified sign-in gave the relying party, and the prf extension's first result.
struct SignedIn {
    var userName: String?
    var credentialID: [UInt8]
    var userVerified: Bool
    var prfFirst: [UInt8]?
}

/// The relying party refused an answer the engine returned.
struct Refused: Error, CustomStringConvertible {
    var verdict: Verdict
    var description: String { "the relying party refused: \(verdict)" }
}

/// The computer as `passkey client register` and `sign-in` are one: the WebAuthn engine whose only authenticator
/// is a phone over hybrid, and this package's web relying party for example.com, its accounts in `state`.
struct Computer: Sendable {
    /// The RP ID check over a Public Suffix List of one rule, `com`.
    static let relyingPartyIDChecker = SuffixListRelyingPartyIDChecker(
        list: try! PublicSuffixList(text: "com\n"), relatedOrigins: nil)

    var scanner: any ProximityScanner
    var relayURL: TunnelServerBaseURL
    var timeout: Duration
    var environment = HybridEnvironment.system()
    var progress: @Sendable (HybridClientProgress) -> Void = { _ in }

    func engine() -> ClientEngine {
        let (scanner, progress) = (scanner, progress)
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: [
                    HybridPhoneAuthenticator(
                        makeScanner: { scanner }, tunnelServer: relayURL, timeouts: HybridTimeouts(all: timeout),
                        environment: environment, progress: progress)
                ],
                userInterface: FirstChoiceInterface(), relyingPartyIDChecker: Self.relyingPartyIDChecker))
    }

    private static var relyingParty: WebRelyingParty {
        WebRelyingParty(
            configuration: .init(relyingParty: RelyingPartyEntity(id: "example.com"), origins: ["https://example.com"]))
    }

    /// A discoverable passkey for `userName` with user verification (the account's passkeys excluded); with `prf`,
    /// the prf extension asked for.
    func register(_ userName: String, prf: Bool = false, state: inout RelyingPartyState) async throws -> Registered {
        var relyingParty = Self.relyingParty
        var options = try PublicKeyCredentialCreationOptions(
            json: relyingParty.registrationOptions(
                for: RegistrationOptionsRequest(
                    userName: userName, residentKey: .required, userVerification: .required),
                state: state, challenge: randomBytes(32), newUserHandle: randomBytes(16), now: .now))
        if prf { options.extensions.prf = PRFInputs() }
        let credential = try await engine().create(options, origin: "https://example.com")
        let outcome = relyingParty.verifyRegistration(credential.json(), state: state, now: .now, date: Date())
        guard case .registered(let accepted) = outcome.verdict, let newState = outcome.newState else {
            throw Refused(verdict: outcome.verdict)
        }
        state = newState
        return Registered(
            userName: accepted.userName, userVerified: accepted.userVerified, credential: accepted.credential,
            prfEnabled: credential.clientExtensionResults.prf?.enabled)
    }

    /// A sign-in with user verification as `userName` (its passkeys in allowCredentials) or as whichever account
    /// the phone offers; with `prf`, the prf extension evaluated at it.
    func signIn(userName: String? = nil, prf: [UInt8]? = nil, state: inout RelyingPartyState) async throws -> SignedIn {
        var relyingParty = Self.relyingParty
        var options = try PublicKeyCredentialRequestOptions(
            json: relyingParty.authenticationOptions(
                for: AuthenticationOptionsRequest(userName: userName, userVerification: .required), state: state,
                challenge: randomBytes(32), now: .now))
        if let prf { options.extensions.prf = PRFInputs(eval: PRFValues(first: prf)) }
        let credential = try await engine().get(options, origin: "https://example.com")
        let outcome = relyingParty.verifyAuthentication(credential.json(), state: state, now: .now)
        guard case .authenticated(let accepted) = outcome.verdict else { throw Refused(verdict: outcome.verdict) }
        if let newState = outcome.newState { state = newState }
        return SignedIn(
            userName: accepted.userName, credentialID: credential.id, userVerified: accepted.userVerified,
            prfFirst: credential.clientExtensionResults.prf?.results?.first)
    }
}

func randomBytes(_ count: Int) -> [UInt8] { AuthenticatorEnvironment.systemRandomBytes(count) }

/// Remembers what a phone advertised and the routing IDs it advertised under.
final class RecordingAdvertiser: Sendable {
    private let state = Mutex<(last: [UInt8]?, routingIDs: [RoutingID])>((nil, []))

    var last: [UInt8]? { state.withLock { $0.last } }
    var routingIDs: [RoutingID] { state.withLock { $0.routingIDs } }

    func record(_ data: [UInt8]) { state.withLock { $0.last = data } }
    func record(_ routingID: RoutingID) { state.withLock { $0.routingIDs.append(routingID) } }

    func wrapping(_ inner: any ProximityAdvertiser) -> any ProximityAdvertiser {
        Wrapper(inner: inner, recorder: self)
    }

    private struct Wrapper: ProximityAdvertiser {
        let inner: any ProximityAdvertiser
        let recorder: RecordingAdvertiser

        func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError) {
            recorder.record(advertisingData)
            try await inner.startAdvertising(advertisingData)
        }
        func stopAdvertising() async { await inner.stopAdvertising() }
        func close() async { await inner.close() }
    }
}

/// A value shared with callbacks.
final class Box<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func set(_ value: Value) { storage.withLock { $0 = value } }
    func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
}
