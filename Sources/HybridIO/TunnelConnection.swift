import Foundation
import Hybrid
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// One WebSocket tunnel to a caBLE tunnel server (`/cable/new/…` or `/cable/connect/…/…`), with subprotocol
/// `fido.cable`. Binary messages go both ways; everything else is handled here: pings are answered, a close is
/// answered and ends the tunnel, fragmented messages are reassembled, and text frames end it with an error.
///
/// Underneath, the upgraded channel is a `NIOAsyncChannel`: ``TunnelFrameHandler`` turns frames into whole
/// messages on the event loop, ``receive(timeout:waitingFor:)`` takes them from the channel's inbound stream and
/// ``send(_:)`` writes through its outbound writer. A task of the tunnel's own holds the channel in
/// `executeThenClose` until the tunnel ends.
public final class TunnelConnection: Sendable {
    /// The largest message accepted, reassembled or not. Tunnel servers cap messages at 16 KiB.
    public static let maximumMessageBytes = 1 << 16
    /// Messages received and not yet taken by ``receive(timeout:waitingFor:)`` that the tunnel holds at most. A
    /// hybrid exchange has a handful in flight; a peer that sends more is flooding, and the tunnel ends with
    /// ``TunnelError/tooManyUnreadMessages``.
    public static let maximumQueuedMessages = 64
    /// Bytes of such messages the tunnel holds at most.
    public static let maximumQueuedBytes = 1 << 20

    /// The `X-caBLE-Routing-ID` value the server sent with its upgrade (only `/cable/new` gets one).
    public let routingIDHeader: String?
    private let channel: any Channel
    private let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
    private let budget: UnreadBudget
    private let reader: InboundReader

    /// Takes over an upgraded channel set up by ``configureUpgradedPipeline(_:budget:)``.
    init(_ asyncChannel: NIOAsyncChannel<TunnelInbound, WebSocketFrame>, budget: UnreadBudget, routingIDHeader: String?)
        async
    {
        let channel = asyncChannel.channel
        let (inbound, outbound) = await withCheckedContinuation { handOver in
            // The tunnel's owner: it holds the channel until the channel closes, then finishes the writer.
            Task {
                try? await asyncChannel.executeThenClose { inbound, outbound in
                    handOver.resume(returning: (inbound, outbound))
                    try await channel.closeFuture.get()
                }
            }
        }
        self.channel = channel
        self.outbound = outbound
        self.budget = budget
        self.routingIDHeader = routingIDHeader
        reader = InboundReader(inbound)
    }

    deinit {
        channel.close(promise: nil)
    }

    /// The handlers of an upgraded tunnel, behind NIO's WebSocket frame decoder and encoder: the frame handler and
    /// the async channel. Call it on the channel's event loop.
    static func configureUpgradedPipeline(_ channel: any Channel, budget: UnreadBudget) throws
        -> NIOAsyncChannel<TunnelInbound, WebSocketFrame>
    {
        let pipeline = channel.pipeline.syncOperations
        // No reading while pongs pile up for a relay that does not read them.
        try pipeline.addHandler(BackPressureHandler())
        try pipeline.addHandler(TunnelFrameHandler(maximumMessageBytes: maximumMessageBytes, budget: budget))
        // The high watermark sits above the unread budget: a flood meets the budget, and a 1008, first.
        let configuration = NIOAsyncChannel<TunnelInbound, WebSocketFrame>.Configuration(
            backPressureStrategy: .init(lowWatermark: 2, highWatermark: maximumQueuedMessages + 2))
        return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: configuration)
    }

    static func makeBudget() -> UnreadBudget {
        UnreadBudget(maximumMessages: maximumQueuedMessages, maximumBytes: maximumQueuedBytes)
    }

    /// Opens a tunnel to `url` and waits for the upgrade. `tls` replaces the system trust store for `wss://`
    /// (self-hosted relays with their own certificate authority); `headers` go with the upgrade request
    /// (`X-caBLE-Client-Payload` on `/cable/contact`).
    public static func connect(
        to url: String,
        timeout: Duration = .seconds(10),
        tls: TLSConfiguration? = nil,
        headers extraHeaders: [(name: String, value: String)] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(TunnelError) -> TunnelConnection {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "ws" || scheme == "wss", let host = components.host, !host.isEmpty
        else { throw .invalidURL(url) }
        let secure = scheme == "wss"
        let port = components.port ?? (secure ? 443 : 80)
        var path = components.percentEncodedPath
        if path.isEmpty { path = "/" }
        if let query = components.percentEncodedQuery { path += "?" + query }

        let sslContext: NIOSSLContext?
        if secure {
            do {
                sslContext = try NIOSSLContext(configuration: tls ?? .makeClientConfiguration())
            } catch {
                throw .unreachable(
                    host: host, port: port, reason: .tlsConfiguration("the TLS settings (a CA file?) cannot be used"))
            }
        } else {
            sslContext = nil
        }
        let budget = makeBudget()
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: components.port.map { "\(host):\($0)" } ?? host)
        headers.add(name: "Sec-WebSocket-Protocol", value: TunnelServerProtocol.webSocketSubprotocol)
        headers.add(name: "Content-Length", value: "0")
        for header in extraHeaders { headers.add(name: header.name, value: header.value) }
        let requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        let tlsHostname = host.first == "[" || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host

        // An IP address needs no resolver round trip; a name goes through NIO's Happy Eyeballs.
        let literal = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let ipAddress = try? SocketAddress(ipAddress: literal, port: port)
        let upgrade: PendingUpgrade
        do {
            let bootstrap = ClientBootstrap(group: group)
                .connectTimeout(TimeAmount(timeout))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
            let initializer: @Sendable (any Channel) -> EventLoopFuture<PendingUpgrade> = { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let handler = try NIOSSLClientHandler(context: sslContext, serverHostname: tlsHostname)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    let upgrader = NIOTypedWebSocketClientUpgrader<UpgradeOutcome>(
                        maxFrameSize: maximumMessageBytes,
                        // The frame handler answers protocol errors itself, and reports them.
                        enableAutomaticErrorHandling: false,
                        upgradePipelineHandler: { channel, response in
                            channel.eventLoop.makeCompletedFuture {
                                if let fault = UpgradeOutcome.fault(in: response) { return .invalid(fault, channel) }
                                return .upgraded(
                                    try configureUpgradedPipeline(channel, budget: budget),
                                    routingIDHeader: response.headers[TunnelServerProtocol.routingIDHeader].first)
                            }
                        }
                    )
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration<UpgradeOutcome>(
                        upgradeRequestHead: requestHead,
                        upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                let promise = channel.eventLoop.makePromise(of: Int.self)
                                try channel.pipeline.syncOperations.addHandler(StatusCatcher(promise: promise))
                                return .refused(promise.futureResult)
                            }
                        }
                    )
                    var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(
                        upgradeConfiguration: configuration)
                    // Frames the relay sends right behind its 101 response arrive in the same read.
                    pipeline.leftOverBytesStrategy = .forwardBytes
                    let result = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: pipeline)
                    return PendingUpgrade(channel: channel, result: result)
                }
            }
            if let ipAddress {
                upgrade = try await bootstrap.connect(to: ipAddress, channelInitializer: initializer)
            } else {
                upgrade = try await bootstrap.connect(host: host, port: port, channelInitializer: initializer)
            }
        } catch {
            throw .unreachable(host: host, port: port, reason: TunnelError.ConnectionFault(error))
        }

        let outcome: UpgradeOutcome
        do {
            guard let answer = try await upgrade.outcome(within: timeout) else {
                throw TunnelError.timedOut("waiting for the relay to upgrade the connection")
            }
            outcome = answer
        } catch let error as TunnelError {
            throw error
        } catch {
            throw UpgradeOutcome.error(for: error, host: host, port: port)
        }
        switch outcome {
        case .upgraded(let asyncChannel, let routingIDHeader):
            return await TunnelConnection(asyncChannel, budget: budget, routingIDHeader: routingIDHeader)
        case .refused(let status):
            let code = (try? await status.get()) ?? 0
            throw .refused(status: code)
        case .invalid(let fault, let channel):
            try? await channel.close()
            throw .badUpgrade(fault)
        }
    }

    /// Sends one binary message.
    public func send(_ message: [UInt8]) async throws(TunnelError) {
        let frame = WebSocketFrame(
            fin: true, opcode: .binary, maskKey: .random(), data: channel.allocator.buffer(bytes: message))
        do {
            try await outbound.write(frame)
        } catch {
            throw .connectionFailed(TunnelError.ConnectionFault(error))
        }
    }

    /// The next binary message, or `nil` once the tunnel closed cleanly. Throws ``TunnelError/timedOut(_:)``
    /// with `what` ("waiting for the handshake") after `timeout`, which leaves the tunnel open. Cancelling the
    /// calling task ends the tunnel (as it ends a `NIOAsyncChannel`'s inbound stream): ``TunnelError/cancelled(_:)``.
    public func receive(timeout: Duration?, waitingFor what: String) async throws(TunnelError) -> [UInt8]? {
        try await reader.receive(timeout: timeout, waitingFor: what, channel: channel, budget: budget)
    }

    /// Whether a receive is waiting now.
    var isReceiving: Bool {
        get async { await reader.isReceiving }
    }

    /// Sends a close frame (normal closure) and closes the connection. Closing twice does nothing.
    public func close(code: WebSocketErrorCode = .normalClosure) async {
        try? await channel.triggerUserOutboundEvent(TunnelCloseRequest(code: code)).get()
        try? await channel.closeFuture.get()
    }
}
