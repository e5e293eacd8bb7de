import Hybrid
import HybridDriver
import Proximity
import WebAuthnClient

extension NearbyPhone {
    /// Runs `body` with the WebAuthn engine as `passkey client` has it when its one authenticator is a phone over
    /// hybrid, and this phone in radio range: each QR code the engine shows is scanned here. For the demo and the
    /// benchmarks, where both devices live in one process. `scanner` stays open across sessions (its owner closes
    /// it); `progress` hears every step of the computer's sessions.
    public func withClient<T: Sendable>(
        scanner: any ProximityScanner, tunnelServer: TunnelServerBaseURL?, timeouts: HybridTimeouts,
        relyingPartyIDChecker: any RelyingPartyIDChecker,
        progress: @escaping @Sendable (HybridClientProgress) -> Void = { _ in },
        _ body: (ClientEngine) async throws -> T
    ) async throws -> T {
        let shared = SharedScanner(scanner)
        return try await watching { show in
            let phone = HybridPhoneAuthenticator(
                makeScanner: { shared }, tunnelServer: tunnelServer, timeouts: timeouts, environment: .system(),
                progress: { event in
                    if case .showQRCode(let url) = event { show(url) }
                    progress(event)
                })
            return try await body(
                ClientEngine(
                    environment: ClientEnvironment(
                        authenticators: [phone], userInterface: FirstChoiceInterface(),
                        relyingPartyIDChecker: relyingPartyIDChecker)))
        }
    }
}
