import NIOCore
import NIOWebSocket
import Relay
import WebSocketMessages

/// Reads an upgraded connection's frames: the shared ``WebSocketMessageAssembler`` turns them into whole binary
/// messages, pings, pongs and closes (or the rule they break), and the connection's state machine decides what
/// follows (see ``RelayConnection``).
///
/// Frames that carry no whole message (pings, pongs, fragments, empty frames) cost the relay work but count
/// neither as messages nor as activity; the state machine allows ``RelayLimits/maximumOverheadFrames`` of them.
final class RelayWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame

    private let connection: RelayConnection
    private var assembler: WebSocketMessageAssembler

    init(connection: RelayConnection, maximumMessageBytes: Int) {
        self.connection = connection
        assembler = WebSocketMessageAssembler(sender: .client, maximumMessageBytes: maximumMessageBytes)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        // Nothing is unmasked for a connection that is closing or has failed; a close frame answering the relay's
        // ends the closing handshake.
        guard connection.isReadingFrames else {
            if frame.opcode == .connectionClose { connection.closeReplyReceived() }
            return
        }
        let event: WebSocketMessageAssembler.Event
        do throws(WebSocketViolation) {
            event = try assembler.receive(frame)
        } catch {
            return connection.frameReceived(Self.frame(for: error), isOverhead: false)
        }
        let received: RelayConnection.StateMachine.Frame =
            switch event {
            case .message(let message): .message(message)
            case .fragment: .fragment
            case .ping(let payload): .ping(payload)
            case .pong: .pong
            case .close(let code): .close(code: code)
            }
        connection.frameReceived(received, isOverhead: Self.isOverhead(frame))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        connection.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? NIOWebSocketError else { return context.close(promise: nil) }
        // A frame header announcing more than the limit is refused before its payload is read.
        connection.frameReceived(Self.frame(for: WebSocketViolation(error)), isOverhead: false)
    }

    /// Whether a frame counts against the overhead budget: anything but a whole non-empty message in one
    /// frame (a close ends the connection anyway, so it is not counted).
    static func isOverhead(_ frame: WebSocketFrame) -> Bool {
        switch frame.opcode {
        case .connectionClose: false
        case .binary, .text: !frame.fin || frame.length == 0
        default: true
        }
    }

    /// The tunnel outcome and close code of a broken rule.
    static func frame(for violation: WebSocketViolation) -> RelayConnection.StateMachine.Frame {
        let outcome: TunnelOutcome =
            switch violation {
            case .textFrame: .textFrame
            case .messageTooLarge: .messageTooLarge
            case .unmaskedFrame, .maskedFrame, .reservedBit, .reservedOpcode, .continuationWithoutMessage,
                .messageInterrupted, .malformedControlFrame:
                .protocolError
            }
        return .violation(outcome, code: UInt16(webSocketErrorCode: violation.closeCode))
    }
}

@available(*, unavailable)
extension RelayWebSocketHandler: Sendable {}

/// Where a relay connection writes its frames, already encoded (``ServerFrame``): just before NIO's
/// `WebSocketFrameEncoder`, which the upgrade adds and which cannot be removed. A message read in one frame then
/// leaves as the one buffer it was unmasked into, with no `WebSocketFrame` or separate header buffer on the way.
/// The handler itself does nothing: its context is the place in the pipeline (``RelayConnection``).
final class ServerFrameOutlet: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
}

@available(*, unavailable)
extension ServerFrameOutlet: Sendable {}
