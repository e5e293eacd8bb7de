import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
import WebSocketMessages

/// The bytes NIO's own `WebSocketFrameEncoder` writes for a final unmasked frame: the reference for
/// ``ServerFrame``.
func encodedByNIO(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) throws -> [UInt8] {
    let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
    try channel.writeAndFlush(WebSocketFrame(fin: true, opcode: opcode, data: payload)).wait()
    var bytes: [UInt8] = []
    while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
    _ = try channel.finish()
    return bytes
}

/// The address of a buffer's first readable byte: equal for two buffers that share their bytes.
func firstByteAddress(_ buffer: ByteBuffer) -> UInt? {
    buffer.withUnsafeReadableBytes { $0.baseAddress.map { UInt(bitPattern: $0) } }
}

struct ServerFrameTests {
    /// Around every boundary of the word-wise unmasking and of the three length encodings.
    static let lengths = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 125, 126, 127, 1000, 65535, 65536, 70001]

    @Test(arguments: lengths)
    func clientMessagesAreUnmaskedAsNIODoes(length: Int) throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<4 {
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let mask = WebSocketMaskingKey.random(using: &random)
            let masked = frame(.binary, payload, mask: mask)
            var fromClient = WebSocketMessageAssembler(sender: .client, maximumMessageBytes: 1 << 17)
            let event = try fromClient.receive(masked)
            #expect(event == .message(masked.unmaskedData), "length \(length), key \(mask)")
            #expect(event == .message(ByteBuffer(bytes: payload)))
        }
    }

    @Test(arguments: lengths)
    func anUnmaskedMessageIsForwardedInPlaceWithNIOsBytes(length: Int) throws {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        var fromClient = WebSocketMessageAssembler(sender: .client, maximumMessageBytes: 1 << 17)
        guard case .message(let message) = try fromClient.receive(frame(.binary, payload, mask: key)) else {
            Issue.record("no message for \(length) bytes")
            return
        }
        let framed = ServerFrame.bytes(opcode: .binary, payload: message, allocator: ByteBufferAllocator())
        #expect(Array(framed.readableBytesView) == (try encodedByNIO(.binary, ByteBuffer(bytes: payload))))
        // The same bytes in memory: the header was written in front of the payload when it was unmasked.
        let header = ServerFrame.headerLength(payloadBytes: length)
        let start = try #require(firstByteAddress(framed))
        if length > 0 {
            #expect(try #require(firstByteAddress(message)) == start + UInt(header))
        }
    }

    @Test(arguments: [WebSocketOpcode.binary, .pong, .connectionClose])
    func aPayloadWithoutTheHeaderInFrontIsCopiedBehindOne(opcode: WebSocketOpcode) throws {
        for length in Self.lengths {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            // Nothing in front, other bytes in front, and a header of another kind or length in front.
            let wrongOpcode = Self.header(opcode: .text, payloadBytes: length)
            let wrongLength = Self.header(opcode: opcode, payloadBytes: length + 1)
            for prefix in [[], [0x82, 0x05, 0x00, 0x00], wrongOpcode, wrongLength] {
                var buffer = ByteBuffer(bytes: prefix + payload)
                buffer.moveReaderIndex(forwardBy: prefix.count)
                let framed = ServerFrame.bytes(opcode: opcode, payload: buffer, allocator: ByteBufferAllocator())
                #expect(
                    Array(framed.readableBytesView) == (try encodedByNIO(opcode, ByteBuffer(bytes: payload))),
                    "\(opcode), \(length) bytes after \(prefix)")
            }
        }
    }

    @Test func aHeaderForAnotherLengthInFrontIsNotUsed() throws {
        // A 4-byte header announcing 200 bytes in front of a 300-byte payload.
        var buffer = ByteBuffer(bytes: [0x82, 126, 0x00, 200] + Array(repeating: 0x41, count: 300))
        buffer.moveReaderIndex(forwardBy: 4)
        let framed = ServerFrame.bytes(opcode: .binary, payload: buffer, allocator: ByteBufferAllocator())
        #expect(Array(framed.readableBytesView) == (try encodedByNIO(.binary, buffer)))
        #expect(framed.readableBytes == 304)
        #expect(Array(framed.readableBytesView.prefix(4)) == [0x82, 126, 0x01, 0x2C])
    }

    static func header(opcode: WebSocketOpcode, payloadBytes: Int) -> [UInt8] {
        var buffer = ByteBuffer()
        let written = ServerFrame.setHeader(opcode: opcode, payloadBytes: payloadBytes, in: &buffer, at: 0)
        buffer.moveWriterIndex(forwardBy: written)
        return Array(buffer.readableBytesView)
    }

    @Test func headerLengthsFollowTheShortestEncoding() {
        #expect(ServerFrame.headerLength(payloadBytes: 0) == 2)
        #expect(ServerFrame.headerLength(payloadBytes: 125) == 2)
        #expect(ServerFrame.headerLength(payloadBytes: 126) == 4)
        #expect(ServerFrame.headerLength(payloadBytes: 65535) == 4)
        #expect(ServerFrame.headerLength(payloadBytes: 65536) == 10)
    }
}
