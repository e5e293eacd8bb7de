/// Why a host-side CTAPHID exchange failed, or why it could not start.
///
/// The first group is what the device did (or did not do); the last three are refusals of the caller's request,
/// thrown by ``CTAPHIDHostStateMachine/send(command:payload:nonce:now:deadline:)`` without changing anything.
public enum CTAPHIDHostError: Error, Hashable, Sendable {
    /// The device answered `CTAPHID_ERROR` with this code.
    case deviceError(CTAPHIDErrorCode)
    /// No `CTAPHID_INIT` response carrying this host's nonce arrived before the deadline.
    case channelAllocationTimedOut
    /// The response to this command was not complete before the deadline.
    case responseTimedOut(CTAPHIDCommand)
    /// The caller cancelled, and the device did not answer within the grace period.
    case cancelled
    /// A continuation packet of the response had the wrong sequence number.
    case outOfSequence(expected: UInt8, received: UInt8)
    /// An initialization packet for a command other than the one outstanding, keepalives and errors aside.
    case unexpectedCommand(CTAPHIDCommand)
    /// An initialization packet arrived while a response was still being reassembled.
    case messageInterrupted(by: CTAPHIDCommand)
    /// A response declared a length its command cannot have (over 7609 bytes, an INIT response under 17, an
    /// empty error).
    case invalidResponseLength(command: CTAPHIDCommand, length: Int)
    /// The INIT response assigned an identifier no channel may have (0 or the broadcast identifier).
    case invalidChannelAssigned(ChannelID)

    /// Refused: an exchange (or a channel allocation) is already in progress.
    case busy
    /// Refused: the payload is longer than ``CTAPHIDPacket/maximumMessageLength`` (its length is given).
    case messageTooLong(Int)
    /// Refused: hosts do not send this command as a message (INIT, CANCEL, KEEPALIVE and ERROR).
    case commandNotSendable(CTAPHIDCommand)
}

extension CTAPHIDHostError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .deviceError(let code):
            "the security key answered with a CTAPHID error: \(code)"
        case .channelAllocationTimedOut:
            "the security key did not answer CTAPHID_INIT in time (is it a FIDO device, and is another program "
                + "holding it?)"
        case .responseTimedOut(let command):
            "the security key did not answer CTAPHID_\(command) in time"
        case .cancelled:
            "cancelled (the security key did not confirm the cancellation)"
        case .outOfSequence(let expected, let received):
            "the security key sent continuation packet \(received) where \(expected) was due"
        case .unexpectedCommand(let command):
            "the security key answered with an unexpected CTAPHID_\(command) packet"
        case .messageInterrupted(let command):
            "the security key interrupted its response with a CTAPHID_\(command) packet"
        case .invalidResponseLength(let command, let length):
            "the security key's CTAPHID_\(command) response declares an impossible length of \(length) bytes"
        case .invalidChannelAssigned(let channel):
            "the security key assigned the reserved channel identifier \(channel)"
        case .busy:
            "another CTAPHID exchange with this security key is still in progress"
        case .messageTooLong(let length):
            "a \(length)-byte message does not fit into CTAPHID's 7609 bytes"
        case .commandNotSendable(let command):
            "CTAPHID_\(command) is not a message a host sends"
        }
    }
}
