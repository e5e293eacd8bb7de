import NIOCore
import NIOWebSocket

/// Turns the frames one WebSocket peer sends into whole binary messages (RFC 6455 §5.4) and control events, for
/// both ends of a caBLE tunnel: the relay reads clients' frames, the tunnel client reads the relay's.
///
/// The frames come from NIO's `WebSocketFrameDecoder`, whose `maxFrameSize` should be the message limit: a frame
/// that announces more is then refused from its header, before its payload is read, and the decoder's error
/// becomes a ``WebSocketViolation`` through ``WebSocketViolation/init(_:)``. Here, fragments are joined while the
/// message stays within ``maximumMessageBytes``; control frames may come between them; a text frame is refused at
/// its first frame, since it ends a tunnel anyway. Payloads are unmasked with `WebSocketFrame.unmaskedData`.
///
/// After a violation the connection must end; the assembler is not meant to be used again.
public struct WebSocketMessageAssembler {
    /// Which end sends the frames: a client masks every frame, a server none (§5.1).
    public enum Sender: Hashable, Sendable {
        case client, server
    }

    /// What one frame amounted to.
    public enum Event: Equatable, Sendable {
        /// A whole binary message, unmasked.
        case message(ByteBuffer)
        /// A fragment of a binary message was kept: the message is not complete yet.
        case fragment
        /// A ping: answer with a pong carrying these bytes.
        case ping(ByteBuffer)
        /// A pong: nothing to do.
        case pong
        /// The peer closes the connection, with its close code when it sent one.
        case close(code: UInt16?)
    }

    public let sender: Sender
    /// The largest message accepted, in one frame or joined from fragments.
    public let maximumMessageBytes: Int
    /// The fragments received so far of a message that is not complete.
    private var partial: ByteBuffer?

    public init(sender: Sender, maximumMessageBytes: Int) {
        self.sender = sender
        self.maximumMessageBytes = maximumMessageBytes
    }

    /// Whether a fragmented message is in progress.
    public var isAssembling: Bool { partial != nil }

    /// One frame from the peer.
    public mutating func receive(_ frame: WebSocketFrame) throws(WebSocketViolation) -> Event {
        switch sender {
        case .client: guard frame.maskKey != nil else { throw .unmaskedFrame }
        case .server: guard frame.maskKey == nil else { throw .maskedFrame }
        }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { throw .reservedBit }
        if frame.opcode.isControlOpcode, !frame.fin || frame.length > 125 { throw .malformedControlFrame }
        switch frame.opcode {
        case .binary:
            guard partial == nil else { throw .messageInterrupted }
            guard frame.length <= maximumMessageBytes else { throw .messageTooLarge }
            guard frame.fin else {
                partial = frame.unmaskedData
                return .fragment
            }
            return .message(Self.unmasked(frame))
        case .continuation:
            guard var message = partial else { throw .continuationWithoutMessage }
            partial = nil  // the only reference now: appending does not copy
            guard message.readableBytes + frame.length <= maximumMessageBytes else { throw .messageTooLarge }
            var payload = frame.unmaskedData
            message.writeBuffer(&payload)
            guard frame.fin else {
                partial = message
                return .fragment
            }
            return .message(message)
        case .text:
            partial = nil
            throw .textFrame
        case .ping:
            return .ping(frame.unmaskedData)
        case .pong:
            return .pong
        case .connectionClose:
            var payload = frame.unmaskedData
            return .close(code: payload.readInteger(as: UInt16.self))
        default:
            throw .reservedOpcode(UInt8(webSocketOpcode: frame.opcode))
        }
    }

    /// The payload of a whole binary message in one frame, unmasked eight bytes at a time (NIO's `unmaskedData`
    /// goes a byte at a time): the relay unmasks every message it forwards. The new buffer starts with the header
    /// of the server frame that carries the message on (``ServerFrame``), just before the payload, so that
    /// forwarding it is one write of one buffer; the message is the buffer's readable bytes as before.
    static func unmasked(_ frame: WebSocketFrame) -> ByteBuffer {
        guard let key = frame.maskKey else { return frame.data }
        let count = frame.data.readableBytes
        let header = ServerFrame.headerLength(payloadBytes: count)
        var output = ByteBufferAllocator().buffer(capacity: header + count)
        ServerFrame.setHeader(opcode: .binary, payloadBytes: count, in: &output, at: 0)
        output.moveWriterIndex(forwardBy: header)
        output.moveReaderIndex(forwardBy: header)
        // The key repeated over a word: byte i of the payload is masked with key[i % 4] (RFC 6455 §5.3), and a word
        // starts at a multiple of eight.
        let keyWord = UInt32(key[0]) | UInt32(key[1]) << 8 | UInt32(key[2]) << 16 | UInt32(key[3]) << 24
        let wide = UInt64(UInt32(littleEndian: keyWord)) | UInt64(UInt32(littleEndian: keyWord)) << 32
        frame.data.withUnsafeReadableBytes { source in
            _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
                var offset = 0
                while offset + 8 <= count {
                    let value = source.loadUnaligned(fromByteOffset: offset, as: UInt64.self) ^ wide
                    target.storeBytes(of: value, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                }
                while offset < count {
                    target[offset] = source[offset] ^ key[offset % 4]
                    offset += 1
                }
                return count
            }
        }
        return output
    }
}
