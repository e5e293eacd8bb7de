import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridIO
import NIOSSL
import NIOWebSocket
import Proximity

/// One open tunnel to a relay, as the links use it: binary messages both ways. `TunnelConnection` is the real one;
/// tests use an in-memory fake.
public protocol HybridTunnel: Sendable {
    /// The `X-caBLE-Routing-ID` value the relay sent with its upgrade (only `/cable/new` gets one).
    var routingIDHeader: String? { get }
    /// Sends one binary message.
    func send(_ message: [UInt8]) async throws(TunnelError)
    /// The next message, or `nil` once the peer has closed. With a `timeout`, throws `TunnelError.timedOut` when
    /// nothing arrived within it; the link then tells its session that the timer expired.
    func receive(timeout: Duration?) async throws(TunnelError) -> [UInt8]?
    /// Closes the tunnel. Closing twice does nothing.
    func close() async
}

/// Every effect a hybrid link has apart from its radio, injected once (cf. `AuthenticatorEnvironment`): tunnels,
/// randomness and time.
public struct HybridEnvironment: Sendable {
    /// Opens the tunnel at `url` (subprotocol `fido.cable`) within `timeout`.
    public var openTunnel: @Sendable (_ url: String, _ timeout: Duration) async throws(TunnelError) -> any HybridTunnel
    /// Cryptographically secure random bytes (QR secrets, session keys, advert nonces); seeded in tests.
    public var randomBytes: @Sendable (Int) -> [UInt8]
    /// The wall clock, for the QR code's timestamp.
    public var currentDate: @Sendable () -> Date
    /// The monotonic clock the session timers run on.
    public var now: @Sendable () -> ContinuousClock.Instant
    /// Sleeps for a duration: the client's advert timer. Throws when cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// Opens a tunnel with extra request headers (`/cable/contact` and its `X-caBLE-Client-Payload`); nil uses
    /// ``openTunnel`` and drops the headers (in-memory tunnels in tests).
    public var openTunnelWithHeaders:
        (
            @Sendable (_ url: String, _ headers: [(name: String, value: String)], _ timeout: Duration)
                async throws(TunnelError) -> any HybridTunnel
        )?

    public init(
        openTunnel:
            @escaping @Sendable (_ url: String, _ timeout: Duration) async throws(TunnelError) ->
            any HybridTunnel,
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = AuthenticatorEnvironment.systemRandomBytes,
        currentDate: @escaping @Sendable () -> Date = { Date() },
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        openTunnelWithHeaders:
            (
                @Sendable (_ url: String, _ headers: [(name: String, value: String)], _ timeout: Duration)
                    async throws(TunnelError) -> any HybridTunnel
            )? = nil
    ) {
        self.openTunnel = openTunnel
        self.openTunnelWithHeaders = openTunnelWithHeaders
        self.randomBytes = randomBytes
        self.currentDate = currentDate
        self.now = now
        self.sleep = sleep
    }

    /// Real WebSockets (with `tls` for `wss://` relays; `nil` trusts the system's roots), the system's random
    /// source and clocks.
    public static func system(tls: TLSConfiguration? = nil) -> HybridEnvironment {
        HybridEnvironment(
            openTunnel: { (url, timeout) async throws(TunnelError) -> any HybridTunnel in
                try await TunnelConnection.connect(to: url, timeout: timeout, tls: tls)
            },
            openTunnelWithHeaders: { (url, headers, timeout) async throws(TunnelError) -> any HybridTunnel in
                try await TunnelConnection.connect(to: url, timeout: timeout, tls: tls, headers: headers)
            })
    }

    /// Opens a tunnel with `headers`: through ``openTunnelWithHeaders`` when set, else ``openTunnel``.
    func openTunnel(_ url: String, headers: [(name: String, value: String)], timeout: Duration)
        async throws(TunnelError) -> any HybridTunnel
    {
        if let openTunnelWithHeaders { return try await openTunnelWithHeaders(url, headers, timeout) }
        return try await openTunnel(url, timeout)
    }

    /// A fresh P-256 key for one session, from `randomBytes`.
    func sessionKey() -> P256.KeyAgreement.PrivateKey {
        P256.KeyAgreement.PrivateKey.randomSessionKey(using: randomBytes)
    }
}

/// What a link waits for on its tunnel: a message, the peer's close, or its session's timer.
enum TunnelEvent {
    case message([UInt8])
    case closed
    case timerExpired
}

extension HybridTunnel {
    /// The next message or the tunnel's end; `.timerExpired` once `deadline` passes, if one is armed (without one,
    /// the link waits as long as the relay keeps the tunnel: relays close idle ones).
    func nextEvent(deadline: ContinuousClock.Instant?, now: ContinuousClock.Instant) async throws(TunnelError)
        -> TunnelEvent
    {
        do throws(TunnelError) {
            guard let message = try await receive(timeout: deadline.map { max(.zero, $0 - now) }) else {
                return .closed
            }
            return .message(message)
        } catch {
            if case .timedOut = error, deadline != nil { return .timerExpired }
            throw error
        }
    }
}

extension TunnelConnection: HybridTunnel {
    public func receive(timeout: Duration?) async throws(TunnelError) -> [UInt8]? {
        try await receive(timeout: timeout, waitingFor: "for the session's timer")
    }

    public func close() async {
        await close(code: .normalClosure)
    }
}
