import CTAP2
import CrossDevice
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Logging
import NIOSSL
import Proximity
import ProximityIO
import RelayIO
import RelyingParty
import TestSupport
import Testing

/// Both roles through a `wss://` relay with a private certificate authority, as `--relay-ca` sets up.
struct SecureRelayTests {
    @Test(.enabled(if: TestCA.openssl != nil, "the openssl command-line tool is not installed"))
    func registrationAndSignInOverWSSWithAPrivateCA() async throws {
        let ca = try await TestCA.make()
        defer { ca.remove() }

        var configuration = RelayServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.tls = try RelayServerConfiguration.makeTLSContext(
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
        func pair(clientTLS: TLSConfiguration?) throws -> (CrossDeviceClient, HybridAuthenticatorLink) {
            let client = try CrossDeviceClient(
                relyingParty: RelyingPartyEntity(id: "example.com"), scanner: scanner, tunnelServer: relayURL,
                environment: .system(tls: clientTLS), timeouts: HybridTimeouts(all: .seconds(10)))
            let service = HybridAuthenticatorLink(
                advertiser: advertiser, tunnelServer: relayURL, timeouts: HybridTimeouts(all: .seconds(10)),
                environment: .system(tls: trusting))
            return (client, service)
        }

        var state = RelyingPartyState()
        let (client, service) = try pair(clientTLS: trusting)
        let registration = try await client.withNearbyPhone(service, authenticator: phone.authenticator, state: &state)
        {
            client, state throws(CrossDeviceError) in
            try await client.register(userName: "alice", state: &state)
        }
        let signIn = try await client.withNearbyPhone(service, authenticator: phone.authenticator, state: &state) {
            client, state throws(CrossDeviceError) in
            try await client.signIn(state: &state)
        }
        #expect(signIn.credentialID == registration.credential.id)

        // Without the private CA the client refuses the relay's certificate and nothing is signed.
        let (untrusting, _) = try pair(clientTLS: nil)
        do {
            _ = try await untrusting.withNearbyPhone(service, authenticator: phone.authenticator, state: &state) {
                client, state throws(CrossDeviceError) in
                try await client.signIn(state: &state)
            }
            Issue.record("signed in through a relay with an untrusted certificate")
        } catch {
            guard case .transport(.tunnel) = error else { throw error }
        }
        #expect(relay.metricsText().contains("relay_tunnels_paired_total 2\n"))
        await advertiser.close()
        await scanner.close()
        await relay.shutdown()
    }
}
