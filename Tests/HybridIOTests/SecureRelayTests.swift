import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import NIOSSL
import Proximity
import ProximityIO
import RelayIO
import RelayTLSIO
import RelyingParty
import TestSupport
import Testing
import WebAuthnClient

/// Both roles through a `wss://` relay with a private certificate authority, as `--relay-ca` sets up.
struct SecureRelayTests {
    @Test func registrationAndSignInOverWSSWithAPrivateCA() async throws {
        let ca = try await TestCA.make()
        defer { ca.remove() }

        var configuration = RelayServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.tls = try RelayTLS(
            certificateChainFile: ca.certificate, privateKeyFile: ca.privateKey)
        var logger = Logger(label: "test.relay")
        logger.logLevel = .critical
        let relay = try await RelayServer.start(configuration, logger: logger)
        let relayURL = try TunnelServerBaseURL(string: "wss://localhost:\(relay.port)")
        var trusting = TLSConfiguration.makeClientConfiguration()
        trusting.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca.caCertificate))

        let phone = Phone()
        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        let advertiser = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: scanner.port)
        let nearby = NearbyPhone(
            link: HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: relayURL, timeouts: HybridTimeouts(all: .seconds(10)),
                environment: .system(tls: trusting)),
            authenticator: phone.authenticator)
        /// The computer, trusting the private CA or not, with the phone near.
        func withComputer<T: Sendable>(clientTLS: TLSConfiguration?, _ body: (Computer) async throws -> T)
            async throws -> T
        {
            try await nearby.watching { show in
                try await body(
                    Computer(
                        scanner: SharedScanner(scanner), relayURL: relayURL, timeout: .seconds(10),
                        environment: .system(tls: clientTLS),
                        progress: { event in
                            if case .showQRCode(let url) = event { show(url) }
                        }))
            }
        }

        var state = RelyingPartyState()
        let registration = try await withComputer(clientTLS: trusting) { computer in
            try await computer.register("alice", state: &state)
        }
        let signIn = try await withComputer(clientTLS: trusting) { computer in
            try await computer.signIn(state: &state)
        }
        #expect(signIn.credentialID == registration.credential.id)

        // Without the private CA the client refuses the relay's certificate and nothing is signed.
        do {
            _ = try await withComputer(clientTLS: nil) { computer in try await computer.signIn(state: &state) }
            Issue.record("signed in through a relay with an untrusted certificate")
        } catch let error as ClientError {
            guard case .transport(let why) = error.reason else { throw error }
            #expect(why.contains("unreachable: TLS failed"), "expected a TLS refusal, got \(why)")
            // In a person's terms: no TLS library dump with its source paths (issue 24, item 5).
            #expect(!why.contains("BoringSSL") && !why.contains(".swift") && !why.contains("errno"), "\(why)")
        }
        #expect(relay.metricsText().contains("relay_tunnels_paired_total 2\n"))
        await advertiser.close()
        await scanner.close()
        await relay.shutdown()
    }
}
