import Foundation
import Hybrid
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// Why a tunnel could not be opened or used.
public enum TunnelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The URL is not a `ws://` or `wss://` URL with a host.
    case invalidURL(String)
    /// No TCP (or TLS) connection could be made.
    case unreachable(host: String, port: Int, reason: String)
    /// The server answered the upgrade with this HTTP status instead of 101.
    case refused(status: Int)
    /// The server upgraded but broke the tunnel protocol (no `fido.cable`, a bad routing ID header).
    case badUpgrade(String)
    /// Nothing arrived within the time allowed.
    case timedOut(String)
    /// The server or peer sent a frame the tunnel protocol does not allow (a text frame, an oversize message).
    case protocolViolation(String)
    /// The connection failed while open.
    case connectionFailed(String)
    /// The peer sent more than ``TunnelConnection/maximumQueuedMessages`` messages (or
    /// ``TunnelConnection/maximumQueuedBytes`` bytes) that were not received yet: a flood, so the tunnel was
    /// closed (1008).
    case tooManyUnreadMessages

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a ws:// or wss:// tunnel URL: \(url)"
        case .unreachable(let host, let port, let reason): "relay \(host):\(port) unreachable: \(reason)"
        case .refused(let status): "relay refused the tunnel (HTTP \(status))"
        case .badUpgrade(let reason): "relay answered the upgrade wrongly: \(reason)"
        case .timedOut(let what): "timed out \(what)"
        case .protocolViolation(let reason): "tunnel protocol violation: \(reason)"
        case .connectionFailed(let reason): "tunnel connection failed: \(reason)"
        case .tooManyUnreadMessages:
            "the peer sent more than \(TunnelConnection.maximumQueuedMessages) messages or "
                + "\(TunnelConnection.maximumQueuedBytes) bytes that were not read yet; tunnel closed"
        }
    }
}

/// One WebSocket tunnel to a caBLE tunnel server (`/cable/new/…` or `/cable/connect/…/…`), with subprotocol
/// `fido.cable`. Binary messages go both ways; everything else is handled here: pings are answered, a close is
/// answered and ends the tunnel, fragmented messages are reassembled, and text frames end it with an error.
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
    private let inbox: TunnelInbox

    private init(channel: any Channel, inbox: TunnelInbox, routingIDHeader: String?) {
        self.channel = channel
        self.inbox = inbox
        self.routingIDHeader = routingIDHeader
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
                throw .unreachable(host: host, port: port, reason: "TLS set-up failed: \(error)")
            }
        } else {
            sslContext = nil
        }
        let inbox = TunnelInbox()
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: components.port.map { "\(host):\($0)" } ?? host)
        headers.add(name: "Sec-WebSocket-Protocol", value: TunnelServerProtocol.webSocketSubprotocol)
        headers.add(name: "Content-Length", value: "0")
        let requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        let tlsHostname = host.first == "[" || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host

        // An IP address needs no resolver round trip; a name goes through NIO's Happy Eyeballs.
        let literal = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let ipAddress = try? SocketAddress(ipAddress: literal, port: port)
        let upgradeResult: EventLoopFuture<UpgradeOutcome>
        do {
            let bootstrap = ClientBootstrap(group: group)
                .connectTimeout(TimeAmount(timeout))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
            let initializer: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<UpgradeOutcome>> = { channel in
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
                                let outcome = UpgradeOutcome.upgraded(response, channel).checked()
                                if case .upgraded = outcome {
                                    try channel.pipeline.syncOperations.addHandler(TunnelFrameHandler(inbox: inbox))
                                }
                                return outcome
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
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: pipeline)
                }
            }
            if let ipAddress {
                upgradeResult = try await bootstrap.connect(to: ipAddress, channelInitializer: initializer)
            } else {
                upgradeResult = try await bootstrap.connect(host: host, port: port, channelInitializer: initializer)
            }
        } catch {
            throw .unreachable(host: host, port: port, reason: describe(error))
        }

        let outcome: UpgradeOutcome
        do {
            outcome = try await withDeadline(timeout, "waiting for the relay to upgrade the connection") {
                try await upgradeResult.get()
            }
        } catch let error as TunnelError {
            throw error
        } catch {
            throw .badUpgrade(describe(error))
        }
        switch outcome {
        case .upgraded(let response, let channel):
            return TunnelConnection(
                channel: channel, inbox: inbox,
                routingIDHeader: response.headers[TunnelServerProtocol.routingIDHeader].first)
        case .refused(let status):
            let code = (try? await status.get()) ?? 0
            throw .refused(status: code)
        case .invalid(let reason, let channel):
            try? await channel.close()
            throw .badUpgrade(reason)
        }
    }

    /// Sends one binary message.
    public func send(_ message: [UInt8]) async throws(TunnelError) {
        let frame = WebSocketFrame(
            fin: true, opcode: .binary, maskKey: .random(), data: channel.allocator.buffer(bytes: message))
        do {
            try await channel.writeAndFlush(frame)
        } catch {
            throw .connectionFailed(Self.describe(error))
        }
    }

    /// The next binary message, or `nil` once the tunnel closed cleanly. Throws after `timeout` with `what`
    /// in the message ("waiting for the handshake").
    public func receive(timeout: Duration, waitingFor what: String) async throws(TunnelError) -> [UInt8]? {
        try await inbox.next(timeout: timeout, what: what, eventLoop: channel.eventLoop)
    }

    /// Sends a close frame (normal closure) and closes the connection. Closing twice does nothing.
    public func close(code: WebSocketErrorCode = .normalClosure) async {
        guard inbox.markClosing() else { return }
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        try? await channel.writeAndFlush(frame)
        try? await channel.close()
    }

    /// A short explanation of an NIO or system error.
    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return error.description }
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first {
            return describe(first.error)
        }
        if error is ChannelError, case .connectTimeout = error as? ChannelError { return "connection timed out" }
        return String(describing: error)
    }
}

/// The result of the HTTP upgrade request.
private enum UpgradeOutcome: Sendable {
    case upgraded(HTTPResponseHead, any Channel)
    case refused(EventLoopFuture<Int>)
    case invalid(String, any Channel)

    /// Checks the upgrade response against the tunnel protocol.
    func checked() -> UpgradeOutcome {
        guard case .upgraded(let response, let channel) = self else { return self }
        let protocols = response.headers["Sec-WebSocket-Protocol"]
        guard protocols.count == 1, protocols[0].trimmingCharacters(in: .whitespaces) == "fido.cable" else {
            return .invalid("the server did not select subprotocol fido.cable", channel)
        }
        let routing = response.headers[TunnelServerProtocol.routingIDHeader]
        guard routing.count <= 1 else { return .invalid("the server sent X-caBLE-Routing-ID twice", channel) }
        return self
    }
}

/// Catches the status of a refused upgrade and closes the connection.
private final class StatusCatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<Int>

    init(promise: EventLoopPromise<Int>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
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

/// Messages received on a tunnel, waiting for `receive`. All state is behind a lock; the event loop fills it.
final class TunnelInbox: Sendable {
    private struct Waiter {
        var token: UInt64
        var continuation: CheckedContinuation<[UInt8]?, any Error>
        var timer: Scheduled<Void>?
    }

    private struct State {
        var messages: [[UInt8]] = []
        var queuedBytes = 0
        /// Set once the tunnel ended: `.some(nil)` for a clean close.
        var end: TunnelError?? = nil
        var waiter: Waiter?
        var nextToken: UInt64 = 0
        var closing = false
    }

    private let state = Mutex(State())
    let maximumMessages: Int
    let maximumBytes: Int

    init(
        maximumMessages: Int = TunnelConnection.maximumQueuedMessages,
        maximumBytes: Int = TunnelConnection.maximumQueuedBytes
    ) {
        self.maximumMessages = maximumMessages
        self.maximumBytes = maximumBytes
    }

    /// Returns false if the tunnel was already being closed.
    func markClosing() -> Bool {
        state.withLock { state in
            defer { state.closing = true }
            return !state.closing
        }
    }

    /// Hands a message to the waiting reader or queues it. Returns false, and queues nothing, when the queue
    /// already holds ``maximumMessages`` messages or the message would take it past ``maximumBytes``.
    func deliver(_ message: [UInt8]) -> Bool {
        let outcome = state.withLock { state -> (accepted: Bool, waiter: Waiter?) in
            guard state.end == nil else { return (true, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
            guard state.messages.count < maximumMessages, state.queuedBytes + message.count <= maximumBytes else {
                return (false, nil)
            }
            state.messages.append(message)
            state.queuedBytes += message.count
            return (true, nil)
        }
        outcome.waiter?.timer?.cancel()
        outcome.waiter?.continuation.resume(returning: message)
        return outcome.accepted
    }

    /// The tunnel ended, cleanly (`nil`) or with an error. Messages already received are still delivered.
    func finish(_ error: TunnelError?) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.end == nil else { return nil }
            state.end = .some(error)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.timer?.cancel()
        if let error {
            waiter?.continuation.resume(throwing: error)
        } else {
            waiter?.continuation.resume(returning: nil)
        }
    }

    func next(timeout: Duration, what: String, eventLoop: any EventLoop) async throws(TunnelError) -> [UInt8]? {
        let token = state.withLock { state in
            state.nextToken += 1
            return state.nextToken
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                    let immediate: Result<[UInt8]?, TunnelError>? = state.withLock { state in
                        if !state.messages.isEmpty {
                            let message = state.messages.removeFirst()
                            state.queuedBytes -= message.count
                            return .success(message)
                        }
                        if let end = state.end { return end.map { .failure($0) } ?? .success(nil) }
                        if state.waiter != nil { return .failure(.protocolViolation("two readers on one tunnel")) }
                        state.waiter = Waiter(token: token, continuation: continuation)
                        return nil
                    }
                    if let immediate {
                        continuation.resume(with: immediate)
                        return
                    }
                    let timer = eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                        self.expire(token: token, TunnelError.timedOut(what))
                    }
                    let stillWaiting = state.withLock { state in
                        guard state.waiter?.token == token else { return false }
                        state.waiter?.timer = timer
                        return true
                    }
                    if !stillWaiting { timer.cancel() }
                }
            } onCancel: {
                self.expire(token: token, TunnelError.timedOut(what + " (cancelled)"))
            }
        } catch let error as TunnelError {
            throw error
        } catch {
            throw .connectionFailed(String(describing: error))
        }
    }

    /// Fails the waiter of `token`, if it still waits, without ending the tunnel.
    private func expire(token: UInt64, _ error: TunnelError) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.waiter?.token == token else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(throwing: error)
    }
}

/// The WebSocket frame handler of a tunnel: binary messages to the inbox, control frames answered.
private final class TunnelFrameHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let inbox: TunnelInbox
    private var fragments: ByteBuffer?
    private var sentClose = false

    init(inbox: TunnelInbox) { self.inbox = inbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var frame = unwrapInboundIn(data)
        if frame.maskKey != nil {
            // RFC 6455 §5.1: a server must not mask its frames.
            fail(context: context, .protocolViolation("the relay sent a masked frame"), code: .protocolError)
            return
        }
        switch frame.opcode {
        case .binary where fragments == nil:
            if frame.fin {
                deliver(Array(buffer: frame.data), context: context)
            } else {
                fragments = frame.data
            }
        case .continuation where fragments != nil:
            fragments!.writeBuffer(&frame.data)
            guard fragments!.readableBytes <= TunnelConnection.maximumMessageBytes else {
                fail(context: context, .protocolViolation("a message is too large"), code: .messageTooLarge)
                return
            }
            if frame.fin {
                let message = Array(buffer: fragments!)
                fragments = nil
                deliver(message, context: context)
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.data)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            inbox.finish(nil)
            if !sentClose {
                sentClose = true
                var data = context.channel.allocator.buffer(capacity: 2)
                data.write(webSocketErrorCode: .normalClosure)
                let close = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
                context.writeAndFlush(wrapOutboundOut(close)).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
            } else {
                context.close(promise: nil)
            }
        case .text:
            fail(context: context, .protocolViolation("the relay sent a text frame"), code: .unacceptableData)
        default:
            fail(
                context: context, .protocolViolation("unexpected WebSocket frame \(frame.opcode)"), code: .protocolError
            )
        }
    }

    /// Queues a whole message for the reader; a peer that floods the queue ends the tunnel.
    private func deliver(_ message: [UInt8], context: ChannelHandlerContext) {
        guard !inbox.deliver(message) else { return }
        fail(context: context, .tooManyUnreadMessages, code: .policyViolation)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A TCP close without a close frame still ends the tunnel; the session decides whether that was early.
        inbox.finish(nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOWebSocketError, error == .invalidFrameLength {
            fail(context: context, .protocolViolation("a message is too large"), code: .messageTooLarge)
        } else {
            fail(context: context, .connectionFailed(TunnelConnection.describe(error)), code: .protocolError)
        }
    }

    private func fail(context: ChannelHandlerContext, _ error: TunnelError, code: WebSocketErrorCode) {
        inbox.finish(error)
        guard !sentClose else { return }
        sentClose = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let close = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        context.writeAndFlush(wrapOutboundOut(close)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

/// Runs `operation`, failing with `TunnelError.timedOut(what)` after `timeout`.
func withDeadline<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TunnelError.timedOut(what)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
