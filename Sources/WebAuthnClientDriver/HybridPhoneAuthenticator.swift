import CBOR
import CTAP2
import Hybrid
import HybridDriver
import HybridIO
import Proximity
import Synchronization
import WebAuthnClient

/// A phone or tablet over hybrid, as a `ClientAuthenticator`: opening it shows the QR code, listens for the phone's
/// advert, meets it at the relay the advert names and finishes the Noise handshake (`HybridClientLink`); each CTAP
/// message then goes through the tunnel. The wire is what `passkey client` has always sent.
public struct HybridPhoneAuthenticator: ClientAuthenticator {
    public var kind: AuthenticatorKind { .hybrid }
    public var transports: [AuthenticatorTransport] { [.hybrid] }

    private let makeScanner: @Sendable () async throws(ProximityError) -> any ProximityScanner
    private let tunnelServer: TunnelServerBaseURL?
    private let timeouts: HybridTimeouts
    private let environment: HybridEnvironment
    private let progress: @Sendable (HybridClientProgress) -> Void
    private let onLinking: (@Sendable (LinkingInfo, TunnelServerBaseURL) -> Void)?

    /// - Parameters:
    ///   - makeScanner: opens the radio when a session opens (the Bluetooth adapter, or the simulated radio); it is
    ///     closed when the session ends.
    ///   - tunnelServer: replaces the relay the phone names (a self-hosted relay).
    ///   - progress: each step of the session, the QR code to show first.
    ///   - onLinking: when set, the QR code says this computer can store linking information (key 4), and the
    ///     linking information the phone sends (verified) is passed here when the session ends, with the relay the
    ///     phone was reached through.
    public init(
        makeScanner: @escaping @Sendable () async throws(ProximityError) -> any ProximityScanner,
        tunnelServer: TunnelServerBaseURL? = nil, timeouts: HybridTimeouts = HybridTimeouts(),
        environment: HybridEnvironment, progress: @escaping @Sendable (HybridClientProgress) -> Void,
        onLinking: (@Sendable (LinkingInfo, TunnelServerBaseURL) -> Void)? = nil
    ) {
        self.makeScanner = makeScanner
        self.tunnelServer = tunnelServer
        self.timeouts = timeouts
        self.environment = environment
        self.progress = progress
        self.onLinking = onLinking
    }

    /// A phone lists nothing before it is reached.
    public func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

    public func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession
    {
        // The relay the phone was reached through: the override, or the domain its advert named.
        let relay = Mutex<TunnelServerBaseURL?>(tunnelServer)
        let progress = progress
        let session = try await LinkedSession.open(makeScanner: makeScanner) {
            scanner throws(AuthenticatorTransportError) in
            do throws(HybridLinkError) {
                return try await HybridClientLink.connect(
                    requestType: ceremony == .create ? .makeCredential : .getAssertion, scanner: scanner,
                    tunnelServer: tunnelServer, timeouts: timeouts, offersLinking: onLinking != nil,
                    environment: environment,
                    progress: { event in
                        if case .advertSeen(_, let domain) = event,
                            let base = try? TunnelServerBaseURL(string: "wss://" + domain.host)
                        {
                            relay.withLock { $0 = $0 ?? base }
                        }
                        progress(event)
                    })
            } catch {
                throw AuthenticatorTransportError(error)
            }
        }
        return Session(session: session, relay: relay.withLock { $0 }, onLinking: onLinking)
    }

    private struct Session: AuthenticatorSession {
        let session: LinkedSession
        let relay: TunnelServerBaseURL?
        let onLinking: (@Sendable (LinkingInfo, TunnelServerBaseURL) -> Void)?

        var info: AuthenticatorInfo { session.info }

        func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
            try await session.send(message)
        }

        func close() async {
            let link = session.link
            let offered = await link.updatedLinking ?? link.linking
            await session.close()
            if let onLinking, let offered, let relay { onLinking(offered, relay) }
        }
    }
}
