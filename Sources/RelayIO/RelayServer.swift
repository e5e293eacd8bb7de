import Foundation
import Hybrid
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Prometheus
import Relay
import Synchronization

/// A caBLE v2 tunnel server: the relay between a phone (`/cable/new/{TUNNEL_ID}`) and a computer
/// (`/cable/connect/{ROUTING_ID}/{TUNNEL_ID}`), over WebSocket with subprotocol `fido.cable`.
///
/// The pairing, forwarding and limit rules are ``RelayRegistry``'s; this class only runs them on SwiftNIO.
/// Binary messages are relayed verbatim and in order; a close on one side closes the other; message
/// contents are never logged. `GET /metrics` answers in Prometheus text format, `GET /healthz` 200 while serving
/// and 503 while draining (``drain()``). See `Docs/Relay.md`.
///
/// ```swift
/// var configuration = RelayServerConfiguration()
/// configuration.port = 0
/// let server = try await RelayServer.start(configuration, logger: Logger(label: "relay"))
/// let endpoint = TunnelServerEndpoint.override(try TunnelServerBaseURL(string: server.baseURL))
/// …
/// await server.shutdown()
/// ```
public final class RelayServer: Sendable {
    /// The bound port (the one the system chose when the configuration asked for port 0).
    public let port: Int
    /// `ws://HOST:PORT` or `wss://HOST:PORT`, for `TunnelServerBaseURL`.
    public let baseURL: String
    /// This instance's routing ID (``RelayServerConfiguration/routingID``, or the random one chosen at start).
    public var routingID: RoutingID { state.routingID }

    private let serverChannel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let state: RelayState
    private let ticker: RepeatedTask
    private let isShutDown = Mutex(false)

    private init(
        serverChannel: any Channel, group: MultiThreadedEventLoopGroup, state: RelayState, ticker: RepeatedTask,
        port: Int, baseURL: String
    ) {
        self.serverChannel = serverChannel
        self.group = group
        self.state = state
        self.ticker = ticker
        self.port = port
        self.baseURL = baseURL
    }

    /// Binds the listening socket and starts relaying.
    ///
    /// - Parameters:
    ///   - configuration: Address, limits, TLS and timeouts.
    ///   - logger: Receives one `info` line per tunnel (outcome, timings, byte and message counts), never
    ///     message contents.
    /// - Throws: ``RelayServerError``.
    /// Why a socket could not be bound, in a person's terms: the system's message for its errno ("address already
    /// in use"), without NIO's call name or the errno number.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? IOError else { return "\(error)" }
        let text = String(cString: strerror(error.errnoCode))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    public static func start(_ configuration: RelayServerConfiguration, logger: Logger) async throws(RelayServerError)
        -> RelayServer
    {
        guard configuration.threads > 0 else { throw .invalidConfiguration("threads must be at least 1") }
        guard (0...65535).contains(configuration.port) else {
            throw .invalidConfiguration("port \(configuration.port) is not 0–65535")
        }
        let limits = configuration.limits
        guard limits.maximumMessageBytes > 0, limits.maximumMessageBytes <= Int(UInt32.max) else {
            throw .invalidConfiguration("maximum message size must be 1 byte to 4 GiB")
        }
        guard configuration.writeBufferWaterMark.low <= configuration.writeBufferWaterMark.high else {
            throw .invalidConfiguration("the low write buffer water mark is above the high one")
        }
        let routingID = configuration.routingID ?? Self.randomRoutingID()
        let contacts: RelayContacts
        do throws(ContactFileError) {
            contacts = try RelayContacts.load(
                configuration: configuration.contacts, routingID: routingID,
                routingIDIsConfigured: configuration.routingID != nil, logger: logger)
        } catch {
            throw .invalidConfiguration(error.description)
        }
        let state = RelayState(
            limits: limits, addressRules: configuration.addressRules,
            routingID: routingID,
            metrics: configuration.metrics ?? PrometheusCollectorRegistry(), logger: logger, contacts: contacts)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.threads)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: configuration.writeBufferWaterMark)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, configuration: configuration, state: state)
                }
            }
        let serverChannel: any Channel
        do {
            serverChannel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw .cannotListen(host: configuration.host, port: configuration.port, reason: Self.reason(error))
        }
        let interval = TimeAmount(configuration.effectiveTickInterval)
        let ticker = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            state.perform(state.tick())
        }
        let port = serverChannel.localAddress?.port ?? configuration.port
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let scheme = configuration.tls == nil ? "ws" : "wss"
        return RelayServer(
            serverChannel: serverChannel, group: group, state: state, ticker: ticker, port: port,
            baseURL: "\(scheme)://\(host):\(port)")
    }

    /// What `GET /metrics` answers: tunnels and connections open, tunnels opened, paired and closed by
    /// outcome, messages and bytes relayed, rejections by reason, whether the relay drains.
    public func metricsText() -> String { state.metricsText() }

    static func randomRoutingID() -> RoutingID {
        // Three bytes, so the initializer cannot throw.
        (try? RoutingID(bytes: (0..<RoutingID.byteCount).map { _ in UInt8.random(in: 0...255) }))!
    }

    /// Stops taking tunnels and waits for the open ones to end: from now on `/cable/new` is refused with 503 and
    /// `/healthz` answers 503 (so a load balancer sends new tunnels elsewhere), while `/cable/connect` and the open
    /// tunnels go on. Returns when the last tunnel has ended (at once if none is open; at the latest after the
    /// tunnel lifetime, when the relay closes what is left), or when ``endDrain()`` is called. The relay keeps
    /// refusing new tunnels afterwards; ``shutdown()`` stops it.
    public func drain() async {
        guard !isShutDown.withLock({ $0 }) else { return }
        let promise = group.next().makePromise(of: Void.self)
        state.perform(state.startDraining(promise))
        try? await promise.futureResult.get()
    }

    /// Makes a pending ``drain()`` return now, with tunnels still open (a second SIGTERM, or SIGINT).
    public func endDrain() {
        state.perform(state.stopWaitingForTunnels())
    }

    /// Whether ``drain()`` was called.
    public var isDraining: Bool { state.isDraining }

    /// Stops accepting, closes every connection (WebSocket sides with close code 1001, going away) and
    /// stops the event loops. Calling it again does nothing.
    public func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        endDrain()
        ticker.cancel()
        try? await serverChannel.close()
        let connections = state.shutDown()
        for connection in connections { connection.close(code: 1001) }
        for connection in connections { try? await connection.channel.closeFuture.get() }
        try? await group.shutdownGracefully()
        state.contacts.flush()
    }

    /// The handlers every connection starts with, before TLS and HTTP: no reading from a peer while what the
    /// relay writes to it piles up (above the high water mark of ``RelayServerConfiguration/writeBufferWaterMark``).
    static func addConnectionHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(BackPressureHandler())
    }

    /// After NIO's upgrader added its frame encoder and decoder: the relay's frame handler, and the outlet the
    /// connection writes its frames at, past the encoder (``ServerFrameOutlet``).
    static func completeUpgrade(
        of connection: RelayConnection, pipeline: ChannelPipeline.SynchronousOperations, maximumMessageBytes: Int
    ) throws {
        try pipeline.addHandler(RelayWebSocketHandler(connection: connection, maximumMessageBytes: maximumMessageBytes))
        let outlet = ServerFrameOutlet()
        let encoder = try pipeline.context(handlerType: WebSocketFrameEncoder.self).handler
        try pipeline.addHandler(outlet, position: .before(encoder))
        connection.upgradeCompleted(outlet: try pipeline.context(handler: outlet))
    }

    /// The pipeline of an accepted connection: TLS if configured, HTTP with the WebSocket upgrader, and
    /// the fallback handler for everything not upgraded.
    static func configure(
        _ channel: any Channel, configuration: RelayServerConfiguration, state: RelayState
    ) throws {
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        guard
            let connection = state.accept(
                address: address,
                make: { RelayConnection(id: $0, address: address, channel: channel, state: state) })
        else {
            throw ChannelError.inputClosed  // too many pending connections from this address: closed at once
        }
        channel.closeFuture.whenComplete { _ in state.perform(state.disconnected(connection)) }
        connection.startRequestTimer(configuration.requestTimeout)

        let pipeline = channel.pipeline.syncOperations
        try addConnectionHandlers(to: pipeline)
        try configuration.tls?.addHandlers(to: pipeline)
        let httpHandler = RelayHTTPHandler(connection: connection, state: state)
        let boundHTTPHandler = NIOLoopBound(httpHandler, eventLoop: channel.eventLoop)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: max(configuration.limits.maximumMessageBytes, 125),
            automaticErrorHandling: false,
            shouldUpgrade: { channel, head in
                channel.eventLoop.makeCompletedFuture { boundHTTPHandler.value.shouldUpgrade(head) }
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    pipeline.removeHandler(boundHTTPHandler.value, promise: nil)
                    try completeUpgrade(
                        of: connection, pipeline: pipeline,
                        maximumMessageBytes: configuration.limits.maximumMessageBytes)
                }
            })
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 8 * 1024
        limits.maxHeaderListSize = 16 * 1024
        limits.maxHeaderFieldCount = 100
        try pipeline.configureHTTPServerPipeline(
            withPipeliningAssistance: false,
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
            withErrorHandling: true,
            withOutboundHeaderValidation: true,
            withEncoderConfiguration: HTTPResponseEncoder.Configuration(),
            withDecoderLimitConfiguration: limits)
        try pipeline.addHandler(httpHandler)
    }
}

/// A relay without sockets: its state, and the pipeline `RelayServer` gives every accepted connection, set up on
/// channels the caller makes. The fuzz targets drive HTTP and WebSocket input through `EmbeddedChannel` with it.
package struct RelayPipelineHarness: Sendable {
    private let configuration: RelayServerConfiguration
    private let state: RelayState

    package init(configuration: RelayServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.state = RelayState(
            limits: configuration.limits, addressRules: configuration.addressRules,
            routingID: configuration.routingID ?? RelayServer.randomRoutingID(),
            metrics: configuration.metrics ?? PrometheusCollectorRegistry(), logger: logger)
    }

    /// Adds an accepted connection's handlers to `channel`, whose remote address must be set; throws when the
    /// relay would refuse the connection (its limits), as `RelayServer` closes it then.
    package func configure(_ channel: any Channel) throws {
        try RelayServer.configure(channel, configuration: configuration, state: state)
    }

    /// One tick of the relay's timer: tunnel lifetimes and idle timeouts.
    package func tick() { state.perform(state.tick()) }

    /// Connections, open tunnels and paired tunnels the relay holds.
    package var holdings: (connections: Int, openTunnels: Int, pairedTunnels: Int) { state.holdings }
}
