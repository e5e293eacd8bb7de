import Foundation
import Hybrid
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

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
        let (iterator, outbound) = await withCheckedContinuation { handOver in
            // The tunnel's owner: it holds the channel until the channel closes, then finishes the writer.
            Task {
                try? await asyncChannel.executeThenClose { inbound, outbound in
                    handOver.resume(returning: (inbound.makeAsyncIterator(), outbound))
                    try await channel.closeFuture.get()
                }
            }
        }
        self.channel = channel
        self.outbound = outbound
        self.budget = budget
        self.routingIDHeader = routingIDHeader
        reader = InboundReader(iterator)
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
    /// (self-hosted relays with their own certificate authority).
    public static func connect(
        to url: String,
        timeout: Duration = .seconds(10),
        tls: TLSConfiguration? = nil,
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
                throw .unreachable(host: host, port: port, reason: .tlsConfiguration(String(describing: error)))
            }
        } else {
            sslContext = nil
        }
        let budget = makeBudget()
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: components.port.map { "\(host):\($0)" } ?? host)
        headers.add(name: "Sec-WebSocket-Protocol", value: TunnelServerProtocol.webSocketSubprotocol)
        headers.add(name: "Content-Length", value: "0")
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
    public func receive(timeout: Duration, waitingFor what: String) async throws(TunnelError) -> [UInt8]? {
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

/// A connected channel whose upgrade request is on its way.
private struct PendingUpgrade: Sendable {
    var channel: any Channel
    var result: EventLoopFuture<UpgradeOutcome>

    /// The answer to the upgrade, or `nil` when none came within `timeout`; the connection is closed then, since a
    /// silent relay would otherwise hold it forever.
    func outcome(within timeout: Duration) async throws -> UpgradeOutcome? {
        try await withThrowingTaskGroup(of: UpgradeOutcome?.self) { group in
            group.addTask { try await result.get() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let outcome = first else {
                channel.close(promise: nil)
                return nil
            }
            return outcome
        }
    }
}

/// The result of the HTTP upgrade request.
private enum UpgradeOutcome: Sendable {
    case upgraded(NIOAsyncChannel<TunnelInbound, WebSocketFrame>, routingIDHeader: String?)
    case refused(EventLoopFuture<Int>)
    case invalid(TunnelError.UpgradeFault, any Channel)

    /// What breaks the tunnel protocol in a 101 answer, if anything.
    static func fault(in response: HTTPResponseHead) -> TunnelError.UpgradeFault? {
        let protocols = response.headers["Sec-WebSocket-Protocol"]
        guard protocols.count == 1, protocols[0].trimmingCharacters(in: .whitespaces) == "fido.cable" else {
            return .subprotocolNotSelected
        }
        guard response.headers[TunnelServerProtocol.routingIDHeader].count <= 1 else { return .routingIDRepeated }
        return nil
    }

    /// The tunnel error for a failure while waiting for the answer.
    static func error(for error: any Error, host: String, port: Int) -> TunnelError {
        switch error {
        case is NIOHTTPClientUpgradeError: .badUpgrade(.invalidHandshake)
        case is HTTPParserError: .badUpgrade(.malformedResponse)
        default:
            switch TunnelError.ConnectionFault(error) {
            case .closed: .badUpgrade(.closedEarly)
            case let fault: .unreachable(host: host, port: port, reason: fault)
            }
        }
    }
}

/// Catches the status of a refused upgrade and closes the connection.
private final class StatusCatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<Int>

    init(promise: EventLoopPromise<Int>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = Self.unwrapInboundIn(data) {
            promise.succeed(Int(head.status.code))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(0)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.succeed(0)
        context.close(promise: nil)
    }
}

/// The reading end of a tunnel's inbound stream. The stream's iterator must not be shared across tasks: the actor
/// keeps it in its own isolation and lets one receive use it at a time.
private actor InboundReader {
    private var iterator: NIOAsyncChannelInboundStream<TunnelInbound>.AsyncIterator
    private(set) var isReceiving = false
    /// How the stream ended, once it has: `.some(nil)` for a clean close.
    private var end: TunnelError?? = nil
    /// The number of the latest receive: a wake-up names the receive it is for.
    private var receives: UInt64 = 0

    init(_ iterator: sending NIOAsyncChannelInboundStream<TunnelInbound>.AsyncIterator) {
        self.iterator = iterator
    }

    func receive(timeout: Duration, waitingFor what: String, channel: any Channel, budget: UnreadBudget)
        async throws(TunnelError) -> [UInt8]?
    {
        if let end {
            if let error = end { throw error }
            return nil
        }
        guard !isReceiving else { throw .concurrentReceive }
        isReceiving = true
        defer { isReceiving = false }
        receives += 1
        let number = receives
        // The deadline does not cancel `next()`, which would end the stream: it wakes it with a marker in the
        // stream. (It is cancelled itself when this function returns.)
        async let _ = Self.wake(number, after: timeout, on: channel)
        switch await next(waking: number, budget: budget) {
        case .message(let message):
            return message
        case .woken:
            throw .timedOut(what)
        case .ended(nil):
            end = .some(nil)
            return nil
        case .ended(let error?):
            end = error
            throw error
        case .cancelled:
            end = .cancelled(what)
            channel.triggerUserOutboundEvent(TunnelCloseRequest(code: .goingAway), promise: nil)
            throw .cancelled(what)
        }
    }

    /// What one read of the inbound stream gave.
    private enum ReadOutcome {
        case message([UInt8])
        /// The receive's deadline passed.
        case woken
        /// The stream ended: cleanly (`nil`) or with the tunnel's error.
        case ended(TunnelError?)
        /// The calling task was cancelled, which ended the stream.
        case cancelled
    }

    /// Reads the stream up to the next message or this receive's wake-up, skipping wake-ups of earlier receives.
    private func next(waking number: UInt64, budget: UnreadBudget) async -> ReadOutcome {
        // A stored property cannot be mutated across a suspension: the loop uses a copy of the iterator (which
        // shares its state), kept for the next receive afterwards.
        var iterator = self.iterator
        defer { self.iterator = iterator }
        do {
            while let element = try await iterator.next(isolation: self) {
                switch element {
                case .message(let message):
                    budget.release(message.count)
                    return .message(message)
                case .wake(number):
                    return .woken
                case .wake:
                    continue
                }
            }
            return .ended(nil)
        } catch let error as TunnelError {
            return .ended(error)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .ended(.connectionFailed(TunnelError.ConnectionFault(error)))
        }
    }

    /// Wakes receive `number` after `timeout`, unless cancelled first.
    private static func wake(_ number: UInt64, after timeout: Duration, on channel: any Channel) async {
        guard (try? await Task.sleep(for: timeout)) != nil else { return }
        channel.pipeline.fireUserInboundEventTriggered(TunnelWake(receive: number))
    }
}
