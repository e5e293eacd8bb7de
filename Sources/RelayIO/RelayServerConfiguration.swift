import Hybrid
import NIOCore
import Prometheus
import Relay

/// Settings of a ``RelayServer``.
///
/// ```swift
/// var configuration = RelayServerConfiguration()
/// configuration.port = 0                       // any free port; read it back from `server.port`
/// configuration.limits.tunnelLifetime = .seconds(30)
/// let server = try await RelayServer.start(configuration, logger: logger)
/// ```
public struct RelayServerConfiguration: Sendable {
    /// The address to listen on (default `127.0.0.1`): an IPv4 or IPv6 address or a host name.
    public var host = "127.0.0.1"
    /// The TCP port (default 8080); 0 lets the system choose one (see ``RelayServer/port``).
    public var port = 8080
    /// Tunnel lifetime, idle timeout, message, buffer, tunnel and per-address limits.
    public var limits = RelayLimits()
    /// Which address a connection counts against (trusted proxies' `X-Forwarded-For`) and how much of it
    /// (IPv4 /24, IPv6 /64 by default).
    public var addressRules = AddressRules()
    /// Each connection's write buffer: when more than `high` bytes wait to be written (the peer does not read),
    /// the relay stops reading from that peer until they drop below `low` (default 32–64 KiB, NIO's).
    public var writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 32 * 1024, high: 64 * 1024)
    /// This instance's routing ID: every `/cable/new` gets it in `X-caBLE-Routing-ID`, and `/cable/connect` with
    /// any other is refused (404), so a load balancer in front of several relays sends `/cable/connect/{ROUTING_ID}/…`
    /// to the instance that registered the tunnel (``RelayRouting``). `nil` (the default): a random one, chosen at
    /// start (``RelayServer/routingID``).
    public var routingID: RoutingID?
    /// The registry the relay's metrics (swift-metrics counters and gauges) are made in and `GET /metrics` renders.
    /// `nil` (the default): the server makes its own, so servers in one process never share counters. The
    /// process-wide `MetricsSystem` is not used.
    public var metrics: PrometheusCollectorRegistry?
    /// Serve `wss` with this TLS termination instead of plain `ws`: `RelayTLS` (RelayTLSIO, swift-nio-ssl) from PEM
    /// files.
    public var tls: (any RelayConnectionSecurity)?
    /// How long a connection may take to complete its TLS handshake and HTTP upgrade request before it is
    /// closed (default 10 s).
    public var requestTimeout = Duration.seconds(10)
    /// How often lifetimes and idle timeouts are checked; `nil` (the default) derives it from the limits:
    /// a tenth of the shorter of the two, between 10 ms and 1 s.
    public var tickInterval: Duration?
    /// Event loop threads (default: one per core).
    public var threads = System.coreCount
    /// The wake channel for linked phones: `/cable/listen` and `/cable/contact` (Docs/Relay.md).
    public var contacts = RelayContactConfiguration()

    /// The defaults: `127.0.0.1:8080`, plain `ws`, ``RelayLimits``' defaults.
    public init() {}

    /// The tick interval in use: ``tickInterval``, or the one derived from the limits.
    var effectiveTickInterval: Duration {
        if let tickInterval { return tickInterval }
        let shortest = min(limits.tunnelLifetime, limits.idleTimeout) / 10
        return min(max(shortest, .milliseconds(10)), .seconds(1))
    }
}

/// TLS termination for the relay's connections, injected so that the relay names no TLS library of its own (its fuzz
/// targets then build without one): `RelayTLS` in RelayTLSIO is swift-nio-ssl's.
public protocol RelayConnectionSecurity: Sendable {
    /// Adds the handlers that terminate TLS to an accepted connection's pipeline, before HTTP.
    func addHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws
}

/// Why a ``RelayServer`` could not start.
public enum RelayServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The listening socket could not be bound (address in use, no such address, …); the reason is the
    /// system's.
    case cannotListen(host: String, port: Int, reason: String)
    /// The TLS certificate or key could not be loaded.
    case tls(String)
    /// A setting is out of range (for example zero threads).
    case invalidConfiguration(String)

    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        case .tls(let reason): "cannot serve wss: \(reason)"
        case .invalidConfiguration(let reason): "invalid configuration: \(reason)"
        }
    }
}
