import Foundation
import Hybrid
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// A connected channel whose upgrade request is on its way.
struct PendingUpgrade: Sendable {
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
enum UpgradeOutcome: Sendable {
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
final class StatusCatcher: ChannelInboundHandler, RemovableChannelHandler {
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
