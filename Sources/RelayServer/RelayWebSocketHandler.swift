import NIOCore
import NIOWebSocket
import RelayCore

/// Joins fragmented WebSocket messages (RFC 6455 §5.4) within the message size limit.
///
/// A text frame is reported at once, without waiting for the rest of the message, because text closes the
/// tunnel anyway. Control frames are not given to it.
struct MessageAssembler {
    /// What a data frame amounted to.
    enum Outcome: Equatable {
        /// A fragment was kept; the message is not complete.
        case incomplete
        /// A whole message.
        case message([UInt8], isText: Bool)
        /// The message grew past the limit (close 1009).
        case tooLarge
        /// A continuation with nothing to continue, or a new message before the last one ended (close 1002).
        case protocolError
    }

    let maximumBytes: Int
    private var partial: [UInt8]?

    init(maximumBytes: Int) { self.maximumBytes = maximumBytes }

    /// One data frame (`binary`, `text` or `continuation`), already unmasked.
    mutating func append(opcode: WebSocketOpcode, fin: Bool, payload: [UInt8]) -> Outcome {
        switch opcode {
        case .text:
            return .message([], isText: true)
        case .binary:
            guard partial == nil else { return .protocolError }
            guard payload.count <= maximumBytes else { return .tooLarge }
            if fin { return .message(payload, isText: false) }
            partial = payload
            return .incomplete
        case .continuation:
            guard var bytes = partial else { return .protocolError }
            guard bytes.count + payload.count <= maximumBytes else { return .tooLarge }
            partial = nil
            bytes += payload
            if fin { return .message(bytes, isText: false) }
            partial = bytes
            return .incomplete
        default:
            return .protocolError
        }
    }
}

/// Turns the frames of an upgraded connection into registry events: whole binary messages, text, closes,
/// protocol errors. Pings are answered (the latest of those pending; see ``RelayConnection/pong(_:)``); pongs
/// are ignored.
///
/// Frames that carry no whole message (pings, pongs, fragments, empty frames) cost the relay work but count
/// neither as messages nor as activity, so each connection may send at most
/// ``RelayLimits/maximumOverheadFrames`` of them; the next closes the tunnel with 1008.
final class RelayWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame

    private let connection: RelayConnection
    private let state: RelayState
    private var assembler: MessageAssembler
    private var overheadFrames = 0
    private var failed = false

    init(connection: RelayConnection, state: RelayState) {
        self.connection = connection
        self.state = state
        assembler = MessageAssembler(maximumBytes: state.limits.maximumMessageBytes)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed, case .open = connection.phase else { return }
        let frame = Self.unwrapInboundIn(data)
        // Clients must mask every frame and no extension is negotiated, so no reserved bit may be set.
        guard let maskKey = frame.maskKey, !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            return fail(.protocolError, code: 1002)
        }
        if Self.isOverhead(frame) {
            overheadFrames += 1
            guard overheadFrames <= state.limits.maximumOverheadFrames else {
                return fail(.tooManyOverheadFrames, code: 1008)
            }
        }
        switch frame.opcode {
        case .ping:
            connection.pong(frame.unmaskedData)
        case .pong:
            break
        case .connectionClose:
            var payload = frame.unmaskedData
            connection.peerSentClose(code: payload.readInteger(as: UInt16.self))
        case .binary, .text, .continuation:
            var payload = Array(frame.data.readableBytesView)
            let key = (maskKey[0], maskKey[1], maskKey[2], maskKey[3])
            payload.withUnsafeMutableBufferPointer { bytes in
                for index in bytes.indices {
                    switch index & 3 {
                    case 0: bytes[index] ^= key.0
                    case 1: bytes[index] ^= key.1
                    case 2: bytes[index] ^= key.2
                    default: bytes[index] ^= key.3
                    }
                }
            }
            switch assembler.append(opcode: frame.opcode, fin: frame.fin, payload: payload) {
            case .incomplete:
                break
            case .message(let bytes, let isText):
                state.perform(state.message(bytes, isText: isText, from: connection))
            case .tooLarge:
                fail(.messageTooLarge, code: 1009)
            case .protocolError:
                fail(.protocolError, code: 1002)
            }
        default:
            fail(.protocolError, code: 1002)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        connection.writabilityChanged()
        context.fireChannelWritabilityChanged()
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

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error as? NIOWebSocketError {
        case .invalidFrameLength?:
            // The frame header announced more than the limit: refused before its payload is read.
            fail(.messageTooLarge, code: 1009)
        case .some:
            fail(.protocolError, code: 1002)
        case nil:
            context.close(promise: nil)
        }
    }

    private func fail(_ outcome: TunnelOutcome, code: UInt16) {
        guard !failed else { return }
        failed = true
        state.perform(state.failed(connection, outcome: outcome, code: code))
    }
}
