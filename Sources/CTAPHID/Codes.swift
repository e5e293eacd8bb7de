/// A CTAPHID command code (CTAP 2.1 §11.2.9), without the initialization-packet bit 0x80.
///
/// A struct rather than an enum, so that codes this module does not name (vendor commands, or garbage)
/// still round-trip and can be answered with ``CTAPHIDErrorCode/invalidCommand``.
public struct CTAPHIDCommand: RawRepresentable, Hashable, Sendable {
    /// The seven-bit command code.
    public var rawValue: UInt8

    /// Wraps a command code; bit 7 is ignored, since it only marks the packet as an initialization packet.
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x7F }

    /// `CTAPHID_PING`: the authenticator echoes the payload.
    public static let ping = CTAPHIDCommand(rawValue: 0x01)
    /// `CTAPHID_MSG`: a CTAP1/U2F request APDU.
    public static let msg = CTAPHIDCommand(rawValue: 0x03)
    /// `CTAPHID_LOCK`: reserve the authenticator for one channel for up to ten seconds.
    public static let lock = CTAPHIDCommand(rawValue: 0x04)
    /// `CTAPHID_INIT`: allocate a channel (on the broadcast channel) or resynchronize one.
    public static let initialize = CTAPHIDCommand(rawValue: 0x06)
    /// `CTAPHID_WINK`: ask the authenticator to identify itself to the user.
    public static let wink = CTAPHIDCommand(rawValue: 0x08)
    /// `CTAPHID_CBOR`: a CTAP2 request (command byte followed by CBOR).
    public static let cbor = CTAPHIDCommand(rawValue: 0x10)
    /// `CTAPHID_CANCEL`: abort the outstanding CBOR request on this channel.
    public static let cancel = CTAPHIDCommand(rawValue: 0x11)
    /// `CTAPHID_KEEPALIVE`: authenticator to host only, "still working" with a ``KeepaliveStatus``.
    public static let keepalive = CTAPHIDCommand(rawValue: 0x3B)
    /// `CTAPHID_ERROR`: authenticator to host only, carries one ``CTAPHIDErrorCode``.
    public static let error = CTAPHIDCommand(rawValue: 0x3F)
}

extension CTAPHIDCommand: CustomStringConvertible {
    /// The specification's name of the command, or its code in hexadecimal.
    public var description: String {
        switch self {
        case .ping: "PING"
        case .msg: "MSG"
        case .lock: "LOCK"
        case .initialize: "INIT"
        case .wink: "WINK"
        case .cbor: "CBOR"
        case .cancel: "CANCEL"
        case .keepalive: "KEEPALIVE"
        case .error: "ERROR"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}

/// The one-byte payload of a `CTAPHID_ERROR` response (CTAP 2.1 §11.2.9.1.6).
public struct CTAPHIDErrorCode: RawRepresentable, Hashable, Sendable {
    /// The error byte.
    public var rawValue: UInt8

    /// Wraps an error byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The command is not known or not allowed here.
    public static let invalidCommand = CTAPHIDErrorCode(rawValue: 0x01)
    /// A parameter of the command is out of range.
    public static let invalidParameter = CTAPHIDErrorCode(rawValue: 0x02)
    /// The declared payload length is wrong for the command or too large.
    public static let invalidLength = CTAPHIDErrorCode(rawValue: 0x03)
    /// A continuation packet arrived out of sequence, or an initialization packet interrupted a message.
    public static let invalidSequence = CTAPHIDErrorCode(rawValue: 0x04)
    /// The message was not completed in time.
    public static let messageTimeout = CTAPHIDErrorCode(rawValue: 0x05)
    /// Another channel holds the authenticator (a transaction or a lock), or this channel is still waiting.
    public static let channelBusy = CTAPHIDErrorCode(rawValue: 0x06)
    /// The command requires a channel lock.
    public static let lockRequired = CTAPHIDErrorCode(rawValue: 0x0A)
    /// The channel identifier is reserved, not allocated, or not allowed for the command.
    public static let invalidChannel = CTAPHIDErrorCode(rawValue: 0x0B)
    /// Any other failure.
    public static let other = CTAPHIDErrorCode(rawValue: 0x7F)
}

extension CTAPHIDErrorCode: CustomStringConvertible {
    /// The specification's name of the error and its byte, such as `ERR_CHANNEL_BUSY (0x06)`.
    public var description: String {
        let name =
            switch self {
            case .invalidCommand: "ERR_INVALID_CMD"
            case .invalidParameter: "ERR_INVALID_PAR"
            case .invalidLength: "ERR_INVALID_LEN"
            case .invalidSequence: "ERR_INVALID_SEQ"
            case .messageTimeout: "ERR_MSG_TIMEOUT"
            case .channelBusy: "ERR_CHANNEL_BUSY"
            case .lockRequired: "ERR_LOCK_REQUIRED"
            case .invalidChannel: "ERR_INVALID_CHANNEL"
            case .other: "ERR_OTHER"
            default: "CTAPHID error"
            }
        let digits = String(rawValue, radix: 16, uppercase: true)
        return "\(name) (0x\(digits.count < 2 ? "0" + digits : digits))"
    }
}

/// The status byte of a `CTAPHID_KEEPALIVE` packet (CTAP 2.1 §11.2.9.2.1).
public enum KeepaliveStatus: UInt8, Hashable, Sendable {
    /// The authenticator is still processing the request.
    case processing = 1
    /// The authenticator is waiting for the user to confirm presence (touch).
    case userPresenceNeeded = 2
}

/// The capability flags an authenticator reports in its `CTAPHID_INIT` response (CTAP 2.1 §11.2.9.1.3).
public struct CTAPHIDCapabilities: OptionSet, Hashable, Sendable {
    /// The flag byte.
    public var rawValue: UInt8

    /// Wraps a flag byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `CAPABILITY_WINK`: `CTAPHID_WINK` is implemented.
    public static let wink = CTAPHIDCapabilities(rawValue: 0x01)
    /// `CAPABILITY_CBOR`: `CTAPHID_CBOR` is implemented.
    public static let cbor = CTAPHIDCapabilities(rawValue: 0x04)
    /// `CAPABILITY_NMSG`: `CTAPHID_MSG` is *not* implemented (no CTAP1/U2F).
    public static let nmsg = CTAPHIDCapabilities(rawValue: 0x08)
}

/// The vendor-defined device version reported in the `CTAPHID_INIT` response.
public struct DeviceVersion: Hashable, Sendable {
    /// The major version number.
    public var major: UInt8
    /// The minor version number.
    public var minor: UInt8
    /// The build number.
    public var build: UInt8

    /// Creates a device version.
    public init(major: UInt8, minor: UInt8, build: UInt8) {
        (self.major, self.minor, self.build) = (major, minor, build)
    }
}
