import Basics
import ArgumentParser
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import PasskeyProvider
import Proximity
import PublicSuffix
import ProximityIO
import Relay
import RelayIO
import RelyingParty
import Synchronization
import WebAuthnClient
import WebAuthnClientDriver
import WebRelyingParty

/// `Tools/bench hybrid`: complete cross-device sign-ins through a relay and the simulated radio.
///
/// Without `--count` or `--duration` it is the benchmark: sequential sign-ins, then concurrent ones for `--seconds`,
/// through an in-process relay (or `--relay`). With either, it is a load run (`HybridSignInLoad`): that many sign-ins
/// or that long, `--concurrency` at a time, every failure counted with its reason and every sign-in with the routing
/// ID the relay gave the phone; `--json` prints the result for scripts.
struct HybridSignInBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hybrid",
        abstract: "Full hybrid sign-ins (QR, advert, tunnel, handshake, getAssertion, RP verification) over the "
            + "simulated radio (advert interval 0), through an in-process relay or --relay.",
        discussion: """
            Without --count or --duration: the benchmark, sequential sign-ins then --seconds of concurrent ones. \
            With --count N or --duration S: a load run, N sign-ins (or as many as start within S seconds; \
            SIGINT or SIGTERM also stops it after the sign-ins in flight) with --concurrency in flight; it counts \
            failures by reason and sign-ins by the routing ID the relay handed the phone on /cable/new (which \
            instance of a cluster served them), and exits 1 if any failed. Point \
            --relay at a cluster's balancer to load-test it (Docs/Relay.md, "Load-testing a cluster").
            """
    )

    @Option(help: "Sequential sign-ins to time (benchmark).") var sequential = 500
    @Option(help: "Concurrent workers: sign-ins in flight at once.") var concurrency = 16
    @Option(help: "Seconds of concurrent sign-ins (benchmark).") var seconds: Double = 5
    @Option(
        help: ArgumentHelp(
            "Use this relay (ws:// or wss://, such as a cluster's balancer) instead of one in this process.",
            valueName: "url"))
    var relay: String?
    @Option(help: "Load run: exactly this many sign-ins.") var count: Int?
    @Option(help: "Load run: start sign-ins for this many seconds.") var duration: Double?
    @Option(help: "Seconds each step of a sign-in may take (connect, advert, handshake, request).")
    var timeout: Double = 10
    @Flag(help: "Load run: print the result as one JSON object on standard output.") var json = false

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let duration, duration <= 0 { throw ValidationError("--duration must be above 0") }
        guard timeout > 0 else { throw ValidationError("--timeout must be above 0") }
        if json, count == nil, duration == nil { throw ValidationError("--json goes with --count or --duration") }
        if let relay { _ = try Self.relayURL(relay) }
    }

    static func relayURL(_ text: String) throws -> TunnelServerBaseURL {
        do throws(TunnelServerURLError) {
            return try TunnelServerBaseURL(string: text)
        } catch {
            throw ValidationError("--relay: \(error)")
        }
    }

    /// What the phone of a worker saw in its current session: the routing ID the relay handed it, and why it
    /// failed (the computer then only sees that no phone came near).
    final class PhoneRecorder: Sendable {
        private let value = Mutex<(routingID: RoutingID?, failure: String?)>((nil, nil))

        func record(_ event: HybridAuthenticatorProgress) {
            if case .advertising(let routingID) = event { value.withLock { $0.routingID = routingID } }
        }

        func failed(_ error: any Error) {
            value.withLock { $0.failure = String(describing: error) }
        }

        /// What was recorded since the last call; forgets it.
        func take() -> (routingID: RoutingID?, failure: String?) {
            value.withLock { recorded in
                defer { recorded = (nil, nil) }
                return recorded
            }
        }
    }

    /// One computer and one phone that know each other: a registered passkey, a scanner and an advertiser. The
    /// computer is the WebAuthn engine and local relying party that `passkey client sign-in` uses, with its
    /// accounts in memory.
    struct Worker: Sendable {
        let phone: NearbyPhone
        let scanner: SimulatedScanner
        let relay: TunnelServerBaseURL
        let timeout: Duration
        let relyingParty: LocalRelyingParty
        let recorder: PhoneRecorder
        let checker: SuffixListRelyingPartyIDChecker

        static func make(relay: TunnelServerBaseURL, timeout: Duration = .seconds(10)) async throws -> Worker {
            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let advertiser = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: scanner.port, interval: .zero)
            var configuration = AuthenticatorConfiguration()
            configuration.accountSelection = .authenticator
            let authenticator = Authenticator(
                configuration: configuration,
                environment: AuthenticatorEnvironment(
                    store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
            let recorder = PhoneRecorder()
            let phone = NearbyPhone(
                link: HybridAuthenticatorLink(
                    advertiser: advertiser, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
                    environment: .system(), progress: { recorder.record($0) }),
                authenticator: authenticator, onFailure: { recorder.failed($0) })
            let worker = Worker(
                phone: phone, scanner: scanner, relay: relay, timeout: timeout,
                relyingParty: LocalRelyingParty(
                    relyingPartyID: "example.com", state: .memory(), random: AuthenticatorEnvironment.systemRandomBytes),
                recorder: recorder,
                checker: SuffixListRelyingPartyIDChecker(list: try PublicSuffixList(text: "com\n"), relatedOrigins: nil)
            )
            _ = try await worker.ceremony { engine in
                try await worker.relyingParty.register(user: "alice", displayName: nil, makeEngine: engine)
            }
            _ = recorder.take()
            return worker
        }

        /// One ceremony through a fresh engine whose phone this worker's phone is.
        private func ceremony<T: Sendable>(
            _ body: (_ makeEngine: () throws -> ClientEngine) async throws -> T
        ) async throws -> T {
            try await phone.withClient(
                scanner: scanner, tunnelServer: relay, timeouts: HybridTimeouts(all: timeout),
                relyingPartyIDChecker: checker
            ) { engine in try await body { engine } }
        }

        /// One verified sign-in; returns its duration.
        func signIn() async throws -> Duration {
            let started = ContinuousClock.now
            let accepted = try await ceremony { engine in
                try await relyingParty.signIn(user: nil, makeEngine: engine)
            }
            guard accepted.userName == "alice" else { throw ValidationError("signed in as the wrong account") }
            return ContinuousClock.now - started
        }
    }

    func run() async throws {
        var inProcess: RelayServer?
        let relayURL: TunnelServerBaseURL
        if let relay {
            relayURL = try Self.relayURL(relay)
        } else {
            var configuration = RelayServerConfiguration()
            configuration.port = 0
            configuration.threads = 1
            configuration.limits.maximumConnectionsPerAddress = 10_000
            configuration.limits.maximumTunnels = max(1024, 4 * concurrency)
            var logger = Logger(label: "bench.relay")
            logger.logLevel = .critical
            let server = try await RelayServer.start(configuration, logger: logger)
            inProcess = server
            relayURL = try Self.relayURL(server.baseURL)
        }
        let relayName = inProcess == nil ? relayURL.string : "\(relayURL.string) (in process, 1 thread)"
        let failed: Bool
        do {
            if count != nil || duration != nil {
                let load = HybridSignInLoad(
                    relay: relayURL, count: count, duration: duration.map { .milliseconds(Int64($0 * 1000)) },
                    concurrency: concurrency, timeout: .milliseconds(Int64(timeout * 1000)))
                if !json { print("passkey-bench hybrid: load run through \(relayName), simulated radio") }
                let result = try await load.run()
                if json {
                    print(try result.jsonText())
                } else {
                    result.printSummary()
                }
                failed = result.failed > 0
            } else {
                print("passkey-bench hybrid: sign-ins through \(relayName), simulated radio")
                try await benchmark(relay: relayURL)
                failed = false
            }
        } catch {
            await inProcess?.shutdown()
            throw error
        }
        await inProcess?.shutdown()
        if failed { throw ExitCode(1) }
    }

    /// Sequential sign-ins, then `seconds` of concurrent ones, with the latency targets.
    private func benchmark(relay relayURL: TunnelServerBaseURL) async throws {
        let timeout = Duration.milliseconds(Int64(timeout * 1000))
        // Sequential: one pair, one sign-in after another.
        let worker = try await Worker.make(relay: relayURL, timeout: timeout)
        for _ in 0..<20 { _ = try await worker.signIn() }  // warm-up
        var latencies: [Duration] = []
        latencies.reserveCapacity(sequential)
        for _ in 0..<sequential { latencies.append(try await worker.signIn()) }
        latencies.sort()
        if !latencies.isEmpty {
            print(
                "  sequential  \(sequential) sign-ins: p50 \(Self.ms(latencies[latencies.count / 2])), "
                    + "p90 \(Self.ms(latencies[latencies.count * 9 / 10])), "
                    + "p99 \(Self.ms(latencies[min(latencies.count - 1, latencies.count * 99 / 100)])), "
                    + "max \(Self.ms(latencies.last!))  (targets: p50 ≤ 5 ms, p99 ≤ 20 ms)")
        }

        // Concurrent: `concurrency` pairs signing in back to back for `seconds`.
        var workers: [Worker] = []
        for _ in 0..<concurrency { workers.append(try await Worker.make(relay: relayURL, timeout: timeout)) }
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let started = ContinuousClock.now
        let allLatencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for worker in workers {
                group.addTask {
                    var mine: [Duration] = []
                    while ContinuousClock.now < deadline { mine.append(try await worker.signIn()) }
                    return mine
                }
            }
            var all: [Duration] = []
            for try await mine in group { all += mine }
            return all.sorted()
        }
        guard !allLatencies.isEmpty else { return }
        let elapsed = ContinuousClock.now - started
        let rate = Double(allLatencies.count) / elapsed.inSeconds
        print(
            "  concurrent  \(concurrency) workers, \(allLatencies.count) sign-ins in \(Self.ms(elapsed)): "
                + String(format: "%.0f sign-ins/s", rate)
                + ", p50 \(Self.ms(allLatencies[allLatencies.count / 2])), "
                + "p99 \(Self.ms(allLatencies[min(allLatencies.count - 1, allLatencies.count * 99 / 100)]))"
                + "  (target ≥ 200/s)")
    }

    static func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.inSeconds * 1000) }
}
