import NIOCore
import NIOWebSocket
import Testing
import WebSocketMessages

/// A frame as NIO's decoder hands it over: masked when a key is given (the payload is then sent masked).
func frame(
    _ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, mask: WebSocketMaskingKey? = nil,
    rsv: (Bool, Bool, Bool) = (false, false, false)
) -> WebSocketFrame {
    var data = ByteBuffer(bytes: payload)
    if let mask { data.webSocketMask(mask) }
    return WebSocketFrame(
        fin: fin, rsv1: rsv.0, rsv2: rsv.1, rsv3: rsv.2, opcode: opcode, maskKey: mask, data: data)
}

let key: WebSocketMaskingKey = [0x37, 0xFA, 0x21, 0x3D]

struct WebSocketMessageAssemblerTests {
    @Test func wholeMessagesInOneFrameComeOutAsTheyAre() throws {
        var fromServer = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: 16)
        #expect(try fromServer.receive(frame(.binary, [1, 2, 3])) == .message(ByteBuffer(bytes: [1, 2, 3])))
        #expect(try fromServer.receive(frame(.binary, [])) == .message(ByteBuffer()))
        #expect(
            try fromServer.receive(frame(.binary, Array(repeating: 7, count: 16)))
                == .message(
                    ByteBuffer(
                        bytes: Array(repeating: 7, count: 16))))
        #expect(!fromServer.isAssembling)
    }

    @Test func clientFramesAreUnmasked() throws {
        var fromClient = WebSocketMessageAssembler(sender: .client, maximumMessageBytes: 1000)
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let masked = frame(.binary, payload, mask: key)
        #expect(Array(buffer: masked.data) != payload)
        #expect(try fromClient.receive(masked) == .message(ByteBuffer(bytes: payload)))
        #expect(try fromClient.receive(frame(.ping, [9, 8, 7], mask: key)) == .ping(ByteBuffer(bytes: [9, 8, 7])))
        #expect(try fromClient.receive(frame(.connectionClose, [0x03, 0xE9], mask: key)) == .close(code: 1001))
    }

    @Test func fragmentsAreJoinedWithControlFramesBetweenThem() throws {
        var fromClient = WebSocketMessageAssembler(sender: .client, maximumMessageBytes: 8)
        #expect(try fromClient.receive(frame(.binary, [1, 2], fin: false, mask: key)) == .fragment)
        #expect(fromClient.isAssembling)
        #expect(try fromClient.receive(frame(.ping, [5], mask: key)) == .ping(ByteBuffer(bytes: [5])))
        #expect(try fromClient.receive(frame(.continuation, [], fin: false, mask: key)) == .fragment)
        #expect(try fromClient.receive(frame(.pong, [6], mask: key)) == .pong)
        #expect(try fromClient.receive(frame(.continuation, [3, 4, 5], fin: false, mask: key)) == .fragment)
        #expect(
            try fromClient.receive(frame(.continuation, [6, 7, 8], mask: key))
                == .message(ByteBuffer(bytes: [1, 2, 3, 4, 5, 6, 7, 8])))
        #expect(!fromClient.isAssembling)
        // The next message starts afresh.
        #expect(try fromClient.receive(frame(.binary, [9], mask: key)) == .message(ByteBuffer(bytes: [9])))
    }

    @Test func aMessageOverTheLimitIsRefusedAtTheFrameThatCrossesIt() throws {
        var fromServer = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: 8)
        #expect(throws: WebSocketViolation.messageTooLarge) { try fromServer.receive(frame(.binary, Array(0..<9))) }

        fromServer = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: 8)
        #expect(try fromServer.receive(frame(.binary, Array(0..<5), fin: false)) == .fragment)
        #expect(try fromServer.receive(frame(.continuation, Array(0..<3), fin: false)) == .fragment)
        #expect(throws: WebSocketViolation.messageTooLarge) { try fromServer.receive(frame(.continuation, [1])) }
        #expect(WebSocketViolation.messageTooLarge.closeCode == .messageTooLarge)
    }

    @Test func textIsRefusedAtItsFirstFrame() {
        for fin in [true, false] {
            var fromServer = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: 100)
            #expect(throws: WebSocketViolation.textFrame) { try fromServer.receive(frame(.text, [0x68], fin: fin)) }
        }
        #expect(WebSocketViolation.textFrame.closeCode == .unacceptableData)
    }

    /// Each broken rule, with the sender it came from.
    static let violations: [(String, WebSocketMessageAssembler.Sender, [WebSocketFrame], WebSocketViolation)] = [
        ("unmasked client frame", .client, [frame(.binary, [1])], .unmaskedFrame),
        ("masked server frame", .server, [frame(.binary, [1], mask: key)], .maskedFrame),
        ("RSV1", .server, [frame(.binary, [1], rsv: (true, false, false))], .reservedBit),
        ("RSV3 on a ping", .client, [frame(.ping, [], mask: key, rsv: (false, false, true))], .reservedBit),
        ("opcode 3", .server, [frame(WebSocketOpcode(encodedWebSocketOpcode: 3)!, [1])], .reservedOpcode(3)),
        ("opcode 0xB", .server, [frame(WebSocketOpcode(encodedWebSocketOpcode: 0xB)!, [])], .reservedOpcode(0xB)),
        ("stray continuation", .server, [frame(.continuation, [1])], .continuationWithoutMessage),
        (
            "binary inside a fragmented message", .server, [frame(.binary, [1], fin: false), frame(.binary, [2])],
            .messageInterrupted
        ),
        (
            "text inside a fragmented message", .server, [frame(.binary, [1], fin: false), frame(.text, [2])],
            .textFrame
        ),
        ("fragmented ping", .server, [frame(.ping, [1], fin: false)], .malformedControlFrame),
        ("126-byte close", .server, [frame(.connectionClose, Array(repeating: 0, count: 126))], .malformedControlFrame),
    ]

    @Test(arguments: violations)
    func brokenRulesAreNamedWithTheirCloseCode(
        name: String, sender: WebSocketMessageAssembler.Sender, frames: [WebSocketFrame], violation: WebSocketViolation
    ) throws {
        var assembler = WebSocketMessageAssembler(sender: sender, maximumMessageBytes: 1000)
        for frame in frames.dropLast() { _ = try assembler.receive(frame) }
        #expect(throws: violation, "\(name)") { try assembler.receive(frames.last!) }
        let expectedCode: WebSocketErrorCode = violation == .textFrame ? .unacceptableData : .protocolError
        #expect(violation.closeCode == expectedCode, "\(name)")
    }

    @Test func closeFramesCarryTheirCodeWhenTheyHaveOne() throws {
        var fromServer = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: 10)
        #expect(try fromServer.receive(frame(.connectionClose, [0x03, 0xE8, 0x62, 0x79, 0x65])) == .close(code: 1000))
        #expect(try fromServer.receive(frame(.connectionClose, [0x0F, 0xA0])) == .close(code: 4000))
        #expect(try fromServer.receive(frame(.connectionClose, [])) == .close(code: nil))
        #expect(try fromServer.receive(frame(.connectionClose, [0x03])) == .close(code: nil))
    }

    @Test(arguments: [
        (NIOWebSocketError.invalidFrameLength, WebSocketViolation.messageTooLarge, WebSocketErrorCode.messageTooLarge),
        (.fragmentedControlFrame, .malformedControlFrame, .protocolError),
        (.multiByteControlFrameLength, .malformedControlFrame, .protocolError),
    ])
    func decoderErrorsBecomeViolations(
        error: NIOWebSocketError, violation: WebSocketViolation, code: WebSocketErrorCode
    ) {
        #expect(WebSocketViolation(error) == violation)
        #expect(WebSocketViolation(error).closeCode == code)
    }

    @Test func violationsReadAsWhatThePeerSent() {
        #expect("\(WebSocketViolation.textFrame)" == "a text frame")
        #expect("\(WebSocketViolation.maskedFrame)" == "a masked frame")
        #expect("\(WebSocketViolation.reservedOpcode(5))" == "a frame with the reserved opcode 5")
    }
}
