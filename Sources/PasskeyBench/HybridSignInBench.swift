import Basics
import ArgumentParser
import CTAP2
import CrossDevice
import Foundation
import Hybrid
import HybridLink
import HybridTransport
import Logging
import Proximity
import RelayCore
import RelayServer
import RelyingParty

/// `Tools/bench hybrid`: complete cross-device sign-ins through a local relay and the simulated radio.
struct HybridSignInBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hybrid",
        abstract: "Full hybrid sign-ins (QR, advert, tunnel, handshake, getAssertion, RP verification), "
            + "sequential and concurrent, through an in-process relay with the simulated radio (advert interval 0)."
    )

    @Option(help: "Sequential sign-ins to time.") var sequential = 500
    @Option(help: "Concurrent workers.") var concurrency = 16
    @Option(help: "Seconds of concurrent sign-ins.") var seconds: Double = 5

    /// One computer and one phone that know each other: a registered passkey, a scanner and an advertiser.
    struct Worker: Sendable {
        let client: CrossDeviceClient
        let phone: HybridAuthenticatorLink
        let authenticator: Authenticator
        let state: RelyingPartyState

        static func make(relay: TunnelServerBaseURL) async throws -> Worker {
            let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
            let advertiser = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: scanner.port, interval: .zero)
            var configuration = AuthenticatorConfiguration()
            configuration.accountSelection = .authenticator
            let authenticator = Authenticator(
                configuration: configuration,
                environment: AuthenticatorEnvironment(
                    store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
            let phone = HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: relay, timeouts: HybridTimeouts(all: .seconds(10)),
                environment: .system())
            let client = try CrossDeviceClient(
                relyingParty: RelyingPartyEntity(id: "example.com"), scanner: scanner, tunnelServer: relay,
                timeouts: HybridTimeouts(all: .seconds(10)))
            var state = RelyingPartyState()
            _ = try await client.withNearbyPhone(phone, authenticator: authenticator, state: &state) {
                client, state throws(CrossDeviceError) in
                try await client.register(userName: "alice", state: &state)
            }
            return Worker(client: client, phone: phone, authenticator: authenticator, state: state)
        }

        /// One verified sign-in; returns its duration.
        func signIn() async throws -> Duration {
            var state = state
            let started = ContinuousClock.now
            let result = try await client.withNearbyPhone(phone, authenticator: authenticator, state: &state) {
                client, state throws(CrossDeviceError) in
                try await client.signIn(state: &state)
            }
            guard result.userName == "alice" else { throw ValidationError("signed in as the wrong account") }
            return ContinuousClock.now - started
        }
    }

    func run() async throws {
        var configuration = RelayServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.limits.maximumConnectionsPerAddress = 10_000
        var logger = Logger(label: "bench.relay")
        logger.logLevel = .critical
        let relay = try await RelayServer.start(configuration, logger: logger)
        let relayURL = try TunnelServerBaseURL(string: relay.baseURL)
        print("passkey-bench hybrid: sign-ins through \(relay.baseURL) (in process, 1 thread), simulated radio")

        // Sequential: one pair, one sign-in after another.
        let worker = try await Worker.make(relay: relayURL)
        for _ in 0..<20 { _ = try await worker.signIn() }  // warm-up
        var latencies: [Duration] = []
        latencies.reserveCapacity(sequential)
        for _ in 0..<sequential { latencies.append(try await worker.signIn()) }
        latencies.sort()
        print(
            "  sequential  \(sequential) sign-ins: p50 \(Self.ms(latencies[latencies.count / 2])), "
                + "p90 \(Self.ms(latencies[latencies.count * 9 / 10])), "
                + "p99 \(Self.ms(latencies[min(latencies.count - 1, latencies.count * 99 / 100)])), "
                + "max \(Self.ms(latencies.last!))  (targets: p50 ≤ 5 ms, p99 ≤ 20 ms)")

        // Concurrent: `concurrency` pairs signing in back to back for `seconds`.
        var workers: [Worker] = []
        for _ in 0..<concurrency { workers.append(try await Worker.make(relay: relayURL)) }
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
        let elapsed = ContinuousClock.now - started
        let rate = Double(allLatencies.count) / elapsed.inSeconds
        print(
            "  concurrent  \(concurrency) workers, \(allLatencies.count) sign-ins in \(Self.ms(elapsed)): "
                + String(format: "%.0f sign-ins/s", rate)
                + ", p50 \(Self.ms(allLatencies[allLatencies.count / 2])), "
                + "p99 \(Self.ms(allLatencies[min(allLatencies.count - 1, allLatencies.count * 99 / 100)]))"
                + "  (target ≥ 200/s)")
        await relay.shutdown()
    }

    static func ms(_ duration: Duration) -> String { String(format: "%.2f ms", duration.inSeconds * 1000) }
}
