import Hybrid
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Relay

/// Decides WebSocket upgrades (called by NIO's upgrader) and answers every request that is not upgraded:
/// `GET /metrics`, `GET /healthz`, refusals with their status, 404 for unknown paths. Each answer closes the
/// connection.
final class RelayHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: RelayConnection
    private let state: RelayState
    private var answered = false
    /// Why the request is refused, when the upgrade path found out before the request reached this handler
    /// (first one wins).
    private var refusal: Refusal?

    init(connection: RelayConnection, state: RelayState) {
        self.connection = connection
        self.state = state
    }

    /// The upgrader's `shouldUpgrade`: `nil` refuses (the reason is kept for the answer), headers accept.
    func shouldUpgrade(_ head: HTTPRequestHead) -> HTTPHeaders? {
        guard head.method == .GET else {
            note(.methodNotAllowed)
            return nil
        }
        let keys = head.headers[canonicalForm: "Sec-WebSocket-Key"]
        guard keys.count == 1, Self.isWebSocketKey(keys[0].utf8) else {
            note(.badWebSocketKey)
            return nil
        }
        let subprotocols = head.headers[canonicalForm: "Sec-WebSocket-Protocol"].map(String.init)
        let forwardedFor = head.headers["X-Forwarded-For"]
        let decision =
            state.contactUpgrade(connection, head: head, subprotocols: subprotocols, forwardedFor: forwardedFor)
            ?? state.upgrade(connection, path: head.uri, subprotocols: subprotocols, forwardedFor: forwardedFor)
        switch decision {
        case .accept(_, let routingIDHeader):
            connection.upgradeAccepted()
            var headers = HTTPHeaders([("Sec-WebSocket-Protocol", TunnelServerProtocol.webSocketSubprotocol)])
            if let routingIDHeader { headers.add(name: TunnelServerProtocol.routingIDHeader, value: routingIDHeader) }
            return headers
        case .reject(let rejection):
            note(.registry(rejection))
            return nil
        }
    }

    private func note(_ reason: Refusal) {
        if refusal == nil { refusal = reason }
    }

    /// 24 characters of base64 that decode to 16 bytes (RFC 6455 §4.1).
    static func isWebSocketKey(_ key: some Collection<UInt8>) -> Bool {
        guard key.count == 24 else { return false }
        return key.enumerated().allSatisfy { index, character in
            switch character {
            case UInt8(ascii: "="): index >= 22
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                index < 22
            default: false
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = Self.unwrapInboundIn(data), !answered else { return }
        answered = true
        if let refusal {
            refuse(refusal, head: head, context: context)
        } else if head.method != .GET {
            refuse(.methodNotAllowed, head: head, context: context)
        } else if head.uri == "/metrics" {
            respond(status: .ok, body: state.metricsText(), context: context)
        } else if head.uri == "/healthz" {
            // A load balancer's health check: fails while the relay drains, so new tunnels go elsewhere.
            let draining = state.isDraining
            respond(
                status: draining ? .serviceUnavailable : .ok, body: draining ? "draining\n" : "ok\n", context: context)
        } else {
            let refusal: Refusal
            do throws(TunnelPathError) {
                if state.contacts.isEnabled, (try? ListenerPath(path: head.uri)) != nil {
                    refusal = .upgradeRequired
                } else {
                    _ = try TunnelPath(path: head.uri)
                    refusal = .upgradeRequired
                }
            } catch {
                refusal = .registry(error == .unknownPath ? .unknownPath : .badHex)
            }
            refuse(refusal, head: head, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error as? NIOWebSocketUpgradeError {
        case .invalidUpgradeHeader?:
            // NIO checks these two headers before asking `shouldUpgrade`.
            note(.unsupportedWebSocketVersion)
            return
        case .unsupportedWebSocketTarget?:
            return  // `shouldUpgrade` refused and noted why
        default:
            break
        }
        if error is HTTPParserError {
            // HTTPServerProtocolErrorHandler has answered 400.
            connection.requestMalformed()
        } else {
            context.close(promise: nil)
        }
    }

    private func refuse(_ refusal: Refusal, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var refusal = refusal
        var headers = HTTPHeaders()
        if refusal == .unsupportedWebSocketVersion {
            let versions = head.headers[canonicalForm: "Sec-WebSocket-Version"]
            if versions.count == 1, versions[0] == "13" {
                refusal = .badWebSocketKey  // the version was fine, so the key was missing or repeated
            } else {
                headers.add(name: "Sec-WebSocket-Version", value: "13")
            }
        }
        if refusal == .methodNotAllowed { headers.add(name: "Allow", value: "GET") }
        if refusal == .upgradeRequired {
            headers.add(name: "Upgrade", value: "websocket")
            headers.add(name: "Sec-WebSocket-Version", value: "13")
        }
        state.refused(refusal)
        let status = HTTPResponseStatus(statusCode: refusal.status ?? 400)
        respond(status: status, body: "\(status.code) \(refusal.label)\n", headers: headers, context: context)
    }

    private func respond(
        status: HTTPResponseStatus, body: String, headers extra: HTTPHeaders = HTTPHeaders(),
        context: ChannelHandlerContext
    ) {
        connection.requestAnswered()
        var headers = extra
        headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        headers.add(name: "Connection", value: "close")
        context.write(
            Self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        )
        .whenFailure { _ in }
        context.write(Self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))))
            .whenFailure { _ in }
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

@available(*, unavailable)
extension RelayHTTPHandler: Sendable {}
