import NIOWebSocket

/// How a WebSocket peer broke RFC 6455, or the rule of a caBLE tunnel that only binary messages cross it. Each
/// reason ends the connection with its ``closeCode``.
public enum WebSocketViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// A client frame without a mask (RFC 6455 §5.1).
    case unmaskedFrame
    /// A server frame with a mask (§5.1).
    case maskedFrame
    /// RSV1, RSV2 or RSV3 set, with no extension negotiated (§5.2).
    case reservedBit
    /// An opcode RFC 6455 reserves: 0x3–0x7 or 0xB–0xF.
    case reservedOpcode(UInt8)
    /// A continuation frame with no fragmented message to continue (§5.4).
    case continuationWithoutMessage
    /// A new message before the fragmented one ended (§5.4).
    case messageInterrupted
    /// A fragmented control frame, or one carrying more than 125 bytes (§5.5).
    case malformedControlFrame
    /// A text frame: a caBLE tunnel carries binary messages only.
    case textFrame
    /// A message over the size limit, in one frame or in fragments together.
    case messageTooLarge

    /// The reason for an error of NIO's `WebSocketFrameDecoder`: a frame header announcing more than its
    /// `maxFrameSize` is a message too large; the others are malformed control frames.
    public init(_ error: NIOWebSocketError) {
        switch error {
        case .invalidFrameLength: self = .messageTooLarge
        case .fragmentedControlFrame, .multiByteControlFrameLength: self = .malformedControlFrame
        }
    }

    /// The close code that answers it: 1003 for text, 1009 for size, 1002 for the rest.
    public var closeCode: WebSocketErrorCode {
        switch self {
        case .textFrame: .unacceptableData
        case .messageTooLarge: .messageTooLarge
        case .unmaskedFrame, .maskedFrame, .reservedBit, .reservedOpcode, .continuationWithoutMessage,
            .messageInterrupted, .malformedControlFrame:
            .protocolError
        }
    }

    /// What the peer sent, as the object of "the relay sent …".
    public var description: String {
        switch self {
        case .unmaskedFrame: "an unmasked frame"
        case .maskedFrame: "a masked frame"
        case .reservedBit: "a frame with a reserved bit set"
        case .reservedOpcode(let opcode): "a frame with the reserved opcode \(opcode)"
        case .continuationWithoutMessage: "a continuation frame with no message to continue"
        case .messageInterrupted: "a new message inside a fragmented one"
        case .malformedControlFrame: "a fragmented or over-long control frame"
        case .textFrame: "a text frame"
        case .messageTooLarge: "a message that is too large"
        }
    }
}
