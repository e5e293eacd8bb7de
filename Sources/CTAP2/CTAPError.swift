import CBOR

/// A CTAP2 status code (CTAP 2.1 §8.2). Every failure of a request is one of these on the wire.
///
/// A struct rather than an enum, so status bytes this code does not name still round-trip.
public struct CTAPError: Error, Hashable, Sendable, RawRepresentable {
    /// The status byte that starts the response.
    public var rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The command byte is not one this authenticator knows.
    public static let invalidCommand = CTAPError(rawValue: 0x01)
    /// A parameter has a value the command cannot accept.
    public static let invalidParameter = CTAPError(rawValue: 0x02)
    /// The request is longer than the authenticator accepts.
    public static let invalidLength = CTAPError(rawValue: 0x03)
    /// Another request is still being handled (CTAP1_ERR_CHANNEL_BUSY).
    public static let channelBusy = CTAPError(rawValue: 0x06)
    /// A CBOR value has the wrong type for its parameter.
    public static let cborUnexpectedType = CTAPError(rawValue: 0x11)
    /// The request is not valid CTAP2 canonical CBOR.
    public static let invalidCBOR = CTAPError(rawValue: 0x12)
    /// A required parameter is missing.
    public static let missingParameter = CTAPError(rawValue: 0x14)
    /// A list or count exceeds the authenticator's limit.
    public static let limitExceeded = CTAPError(rawValue: 0x15)
    /// A credential in the excludeList already exists here.
    public static let credentialExcluded = CTAPError(rawValue: 0x19)
    /// None of the requested algorithms is supported.
    public static let unsupportedAlgorithm = CTAPError(rawValue: 0x26)
    /// The user declined, or the authenticator refuses the operation.
    public static let operationDenied = CTAPError(rawValue: 0x27)
    /// No room to store another credential.
    public static let keyStoreFull = CTAPError(rawValue: 0x28)
    /// An option this command does not support.
    public static let unsupportedOption = CTAPError(rawValue: 0x2B)
    /// An option value is not valid here.
    public static let invalidOption = CTAPError(rawValue: 0x2C)
    /// The platform cancelled the request while the authenticator waited for the user.
    public static let keepaliveCancel = CTAPError(rawValue: 0x2D)
    /// No credential matches the request.
    public static let noCredentials = CTAPError(rawValue: 0x2E)
    /// The user did not answer in time.
    public static let userActionTimeout = CTAPError(rawValue: 0x2F)
    /// The command is not allowed in the current state (for example getNextAssertion with nothing pending).
    public static let notAllowed = CTAPError(rawValue: 0x30)
    /// A pinUvAuthToken is needed but none was given.
    public static let pinUvAuthTokenRequired = CTAPError(rawValue: 0x36)
    /// Built-in user verification failed.
    public static let userVerificationInvalid = CTAPError(rawValue: 0x3F)
    /// Any other failure.
    public static let other = CTAPError(rawValue: 0x7F)
}

extension CTAPError {
    /// Every CBOR rejection is a parse error for the command (CTAP 2.1 §8.2: CTAP2_ERR_INVALID_CBOR).
    public init(_ error: CBORError) {
        self = .invalidCBOR
    }
}

extension CTAPError: CustomStringConvertible {
    public var description: String {
        let name: String =
            switch self {
            case .invalidCommand: "CTAP1_ERR_INVALID_COMMAND"
            case .invalidParameter: "CTAP1_ERR_INVALID_PARAMETER"
            case .invalidLength: "CTAP1_ERR_INVALID_LENGTH"
            case .channelBusy: "CTAP1_ERR_CHANNEL_BUSY"
            case .cborUnexpectedType: "CTAP2_ERR_CBOR_UNEXPECTED_TYPE"
            case .invalidCBOR: "CTAP2_ERR_INVALID_CBOR"
            case .missingParameter: "CTAP2_ERR_MISSING_PARAMETER"
            case .limitExceeded: "CTAP2_ERR_LIMIT_EXCEEDED"
            case .credentialExcluded: "CTAP2_ERR_CREDENTIAL_EXCLUDED"
            case .unsupportedAlgorithm: "CTAP2_ERR_UNSUPPORTED_ALGORITHM"
            case .operationDenied: "CTAP2_ERR_OPERATION_DENIED"
            case .keyStoreFull: "CTAP2_ERR_KEY_STORE_FULL"
            case .unsupportedOption: "CTAP2_ERR_UNSUPPORTED_OPTION"
            case .invalidOption: "CTAP2_ERR_INVALID_OPTION"
            case .keepaliveCancel: "CTAP2_ERR_KEEPALIVE_CANCEL"
            case .noCredentials: "CTAP2_ERR_NO_CREDENTIALS"
            case .userActionTimeout: "CTAP2_ERR_USER_ACTION_TIMEOUT"
            case .notAllowed: "CTAP2_ERR_NOT_ALLOWED"
            case .pinUvAuthTokenRequired: "CTAP2_ERR_PUAT_REQUIRED"
            case .userVerificationInvalid: "CTAP2_ERR_UV_INVALID"
            case .other: "CTAP1_ERR_OTHER"
            default: "CTAP status"
            }
        return "\(name) (0x\([rawValue].hexString))"
    }
}
