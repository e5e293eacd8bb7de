import NIOCore
import NIOWebSocket

/// The frames a server sends, as bytes: final, never masked (RFC 6455 §5.1), with the shortest length encoding
/// (§5.2). The relay writes these bytes itself instead of handing NIO's encoder a `WebSocketFrame`, so that a
/// message it read in one frame leaves as one buffer: ``WebSocketMessageAssembler`` unmasks such a message into a
/// buffer that already holds this header just before the payload (``bytes(opcode:payload:allocator:)``).
public enum ServerFrame {
    /// The length of the header of an unmasked final frame carrying `payloadBytes`.
    @inlinable
    public static func headerLength(payloadBytes: Int) -> Int {
        if payloadBytes < 126 { return 2 }
        return payloadBytes <= Int(UInt16.max) ? 4 : 10
    }

    /// Writes the header of an unmasked final frame at `index` of `buffer` (whose indices are not moved) and
    /// returns its length.
    @inlinable
    @discardableResult
    public static func setHeader(
        opcode: WebSocketOpcode, payloadBytes: Int, in buffer: inout ByteBuffer, at index: Int
    ) -> Int {
        let first = 0x80 | UInt8(webSocketOpcode: opcode)
        switch headerLength(payloadBytes: payloadBytes) {
        case 2:
            return buffer.setInteger(first, at: index) + buffer.setInteger(UInt8(payloadBytes), at: index + 1)
        case 4:
            return buffer.setInteger(first, at: index) + buffer.setInteger(UInt8(126), at: index + 1)
                + buffer.setInteger(UInt16(payloadBytes), at: index + 2)
        default:
            return buffer.setInteger(first, at: index) + buffer.setInteger(UInt8(127), at: index + 1)
                + buffer.setInteger(UInt64(payloadBytes), at: index + 2)
        }
    }

    /// The bytes of the frame carrying `payload`'s readable bytes.
    ///
    /// When the bytes just before the payload are that frame's header already (as
    /// ``WebSocketMessageAssembler`` leaves a message it unmasked), the frame is `payload` itself with its reader
    /// index moved back over them: nothing is copied or allocated. Otherwise the header and the payload are
    /// copied into a new buffer. Either way the bytes are the same.
    public static func bytes(
        opcode: WebSocketOpcode, payload: ByteBuffer, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        let count = payload.readableBytes
        let header = headerLength(payloadBytes: count)
        if payload.readerIndex >= header {
            var framed = payload
            framed.moveReaderIndex(to: payload.readerIndex - header)
            if hasHeader(framed, opcode: opcode, payloadBytes: count) { return framed }
        }
        var framed = allocator.buffer(capacity: header + count)
        let written = setHeader(opcode: opcode, payloadBytes: count, in: &framed, at: 0)
        framed.moveWriterIndex(forwardBy: written)
        framed.writeImmutableBuffer(payload)
        return framed
    }

    /// Whether `buffer`'s readable bytes start with the header of an unmasked final frame of `payloadBytes`.
    @inlinable
    static func hasHeader(_ buffer: ByteBuffer, opcode: WebSocketOpcode, payloadBytes: Int) -> Bool {
        let start = buffer.readerIndex
        guard buffer.getInteger(at: start, as: UInt8.self) == 0x80 | UInt8(webSocketOpcode: opcode) else {
            return false
        }
        switch headerLength(payloadBytes: payloadBytes) {
        case 2:
            return buffer.getInteger(at: start + 1, as: UInt8.self) == UInt8(payloadBytes)
        case 4:
            return buffer.getInteger(at: start + 1, as: UInt8.self) == 126
                && buffer.getInteger(at: start + 2, as: UInt16.self) == UInt16(payloadBytes)
        default:
            return buffer.getInteger(at: start + 1, as: UInt8.self) == 127
                && buffer.getInteger(at: start + 2, as: UInt64.self) == UInt64(payloadBytes)
        }
    }
}
