import CTAP2
import CrossDevice
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import Proximity
import ProximityIO
import Relay
import RelayIO
import RelyingParty
import Synchronization
import Testing

/// Cross-device registration and sign-in end to end, in process: a real relay on loopback, the simulated radio,
/// the client role as a browser and relying party, and the authenticator role with this package's CTAP2
/// authenticator. Every sign-in is verified by the relying-party verifier.
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

    /// A phone that answers one request per QR code cannot serve prf's second request: a transport error.
    @Test func prfNeedsAPhoneThatKeepsTheSessionOpen() async throws {
        try await withRelay { relay in
            let phone = Phone()
            var state = RelyingPartyState()
            _ = try await Pair(relay: relay, phone: phone).register("alice", prf: true, state: &state)
            do {
                _ = try await Pair(relay: relay, phone: phone).signIn(prf: [1], state: &state)
                Issue.record("prf worked although the phone closed after the key agreement")
            } catch let error as CrossDeviceError {
                guard case .transport = error else { throw error }
            }
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
            } catch let error as CrossDeviceError {
                guard case .authenticator(.credentialExcluded) = error else { throw error }
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
            let client = try CrossDeviceClient(
                relyingParty: RelyingPartyEntity(id: "example.com"), scanner: scanner,
                tunnelServer: try TunnelServerBaseURL(string: relay.baseURL),
                timeouts: HybridTimeouts(all: .seconds(1)),
                progress: { event in
                    if case .hybrid(.showQRCode(let url)) = event { shown.yield(url) }
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
                _ = try await client.register(userName: "alice", state: &state)
                Issue.record("registered without a nearby authenticator")
            } catch let error as CrossDeviceError {
                guard case .transport(.session(.noNearbyAuthenticator)) = error else { throw error }
                #expect(error.description.hasPrefix("no nearby authenticator answered within 1 s"))
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
            let cases: [(rp: String, origin: String)] = [
                ("example.com", "https://evil.example"), ("example.com", "http://example.com"),
                ("login.example.com", "https://example.com"), ("com", "https://example.com"),
                ("example.com", "https://example.com/path"), ("example.com", "not a url"),
            ]
            let relayURL = try TunnelServerBaseURL(string: relay.baseURL)
            for (rp, origin) in cases {
                do throws(CrossDeviceError) {
                    _ = try CrossDeviceClient(
                        relyingParty: RelyingPartyEntity(id: rp), origin: origin, scanner: scanner,
                        tunnelServer: relayURL, progress: { _ in started.set(true) })
                    Issue.record("\(rp) from \(origin) was accepted")
                } catch {
                    guard case .origin = error else {
                        Issue.record("\(rp) from \(origin): unexpected \(error)")
                        continue
                    }
                }
            }
            // A subdomain origin for a parent RP ID is what browsers allow.
            _ = try CrossDeviceClient(
                relyingParty: RelyingPartyEntity(id: "example.com"), origin: "https://login.example.com:8443",
                scanner: scanner)
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
            } catch let error as CrossDeviceError {
                guard case .transport(.session(.crypter)) = error else {
                    Issue.record("expected a decrypt error, got \(error)")
                    return
                }
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
            } catch let error as CrossDeviceError {
                guard case .transport = error else {
                    Issue.record("expected a transport error, got \(error)")
                    return
                }
            }
            let error = try #require(phoneError.error as? HybridLinkError)
            guard case .session(.crypter) = error else {
                Issue.record("expected a decrypt error on the phone, got \(error)")
                return
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
        } catch let error as CrossDeviceError {
            guard case .transport(.session(.timedOut(let what, let timeout))) = error else {
                Issue.record("expected a timeout, got \(error)")
                return
            }
            #expect(what == .handshake && timeout == .milliseconds(500))
            #expect(error.description == "timed out waiting for the authenticator's handshake (0.5 s)")
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

    func register(_ userName: String, prf: Bool = false, state: inout RelyingPartyState) async throws
        -> CrossDeviceRegistration
    {
        try await run(state: &state) { client, state throws(CrossDeviceError) in
            try await client.register(userName: userName, prf: prf, state: &state)
        }
    }

    func signIn(userName: String? = nil, prf: [UInt8]? = nil, state: inout RelyingPartyState) async throws
        -> CrossDeviceSignIn
    {
        try await run(state: &state) { client, state throws(CrossDeviceError) in
            try await client.signIn(userName: userName, prf: prf, state: &state)
        }
    }

    private func run<T: Sendable>(
        state: inout RelyingPartyState,
        _ body: (CrossDeviceClient, inout RelyingPartyState) async throws(CrossDeviceError) -> T
    ) async throws -> T {
        let ownScanner = scanner == nil ? try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0) : nil
        let scanner: any ProximityScanner = self.scanner ?? ownScanner!
        let port = scannerPort ?? ownScanner!.port
        let onAdvertSeen = onAdvertSeen
        let client = try CrossDeviceClient(
            relyingParty: RelyingPartyEntity(id: "example.com"), scanner: scanner,
            tunnelServer: try TunnelServerBaseURL(string: clientRelayURL ?? relayURL),
            timeouts: HybridTimeouts(all: timeout),
            progress: { event in
                if case .hybrid(.advertSeen(let routingID, _)) = event { onAdvertSeen?(routingID) }
            })
        let radio = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: port, interval: .milliseconds(20))
        let advertiser: any ProximityAdvertiser = advertiserWrapper.map { $0.wrapping(radio) } ?? radio
        let service = HybridAuthenticatorLink(
            advertiser: advertiser, tunnelServer: try TunnelServerBaseURL(string: relayURL),
            timeouts: HybridTimeouts(all: timeout), keepOpen: phone.keepOpen, environment: .system(),
            progress: { [advertiserWrapper] event in
                if case .advertising(let routingID) = event { advertiserWrapper?.record(routingID) }
            })
        let phoneError = phoneError
        let result: Result<T, CrossDeviceError>
        do throws(CrossDeviceError) {
            result = .success(
                try await client.withNearbyPhone(
                    service, authenticator: phone.authenticator, scanDelay: phoneDelay,
                    phoneFailed: { phoneError?.set($0) }, state: &state, body))
        } catch {
            result = .failure(error)
        }
        await radio.close()
        await ownScanner?.close()
        return try result.get()
    }
}

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
