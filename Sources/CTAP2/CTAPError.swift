import Basics
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
    /// A fragment arrived out of order (CTAP1_ERR_INVALID_SEQ).
    public static let invalidSequence = CTAPError(rawValue: 0x04)
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
    /// The large-blob array would be longer than the authenticator keeps.
    public static let largeBlobStorageFull = CTAPError(rawValue: 0x18)
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
    /// The PIN is wrong.
    public static let pinInvalid = CTAPError(rawValue: 0x31)
    /// No PIN attempts are left: the PIN is blocked until authenticatorReset.
    public static let pinBlocked = CTAPError(rawValue: 0x32)
    /// A pinUvAuthParam does not verify, or the token lacks the permission.
    public static let pinAuthInvalid = CTAPError(rawValue: 0x33)
    /// Too many consecutive wrong PINs: PIN use is blocked until the authenticator restarts.
    public static let pinAuthBlocked = CTAPError(rawValue: 0x34)
    /// No PIN is set.
    public static let pinNotSet = CTAPError(rawValue: 0x35)
    /// A pinUvAuthToken is needed but none was given.
    public static let pinUvAuthTokenRequired = CTAPError(rawValue: 0x36)
    /// The new PIN breaks the PIN policy (too short, too long, not UTF-8, or must change).
    public static let pinPolicyViolation = CTAPError(rawValue: 0x37)
    /// A request's data exceeds what the authenticator accepts.
    public static let requestTooLarge = CTAPError(rawValue: 0x39)
    /// User presence is needed for this request.
    public static let userPresenceRequired = CTAPError(rawValue: 0x3B)
    /// No built-in user verification attempts are left.
    public static let userVerificationBlocked = CTAPError(rawValue: 0x3C)
    /// A checksum does not match (the large-blob array's hash).
    public static let integrityFailure = CTAPError(rawValue: 0x3D)
    /// The subcommand is not one this authenticator knows.
    public static let invalidSubcommand = CTAPError(rawValue: 0x3E)
    /// Built-in user verification failed.
    public static let userVerificationInvalid = CTAPError(rawValue: 0x3F)
    /// The token's permissions do not cover the request, or a permission is not supported.
    public static let unauthorizedPermission = CTAPError(rawValue: 0x40)
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
            case .invalidSequence: "CTAP1_ERR_INVALID_SEQ"
            case .channelBusy: "CTAP1_ERR_CHANNEL_BUSY"
            case .cborUnexpectedType: "CTAP2_ERR_CBOR_UNEXPECTED_TYPE"
            case .invalidCBOR: "CTAP2_ERR_INVALID_CBOR"
            case .missingParameter: "CTAP2_ERR_MISSING_PARAMETER"
            case .limitExceeded: "CTAP2_ERR_LIMIT_EXCEEDED"
            case .largeBlobStorageFull: "CTAP2_ERR_LARGE_BLOB_STORAGE_FULL"
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
            case .pinInvalid: "CTAP2_ERR_PIN_INVALID"
            case .pinBlocked: "CTAP2_ERR_PIN_BLOCKED"
            case .pinAuthInvalid: "CTAP2_ERR_PIN_AUTH_INVALID"
            case .pinAuthBlocked: "CTAP2_ERR_PIN_AUTH_BLOCKED"
            case .pinNotSet: "CTAP2_ERR_PIN_NOT_SET"
            case .pinUvAuthTokenRequired: "CTAP2_ERR_PUAT_REQUIRED"
            case .pinPolicyViolation: "CTAP2_ERR_PIN_POLICY_VIOLATION"
            case .requestTooLarge: "CTAP2_ERR_REQUEST_TOO_LARGE"
            case .userPresenceRequired: "CTAP2_ERR_UP_REQUIRED"
            case .userVerificationBlocked: "CTAP2_ERR_UV_BLOCKED"
            case .integrityFailure: "CTAP2_ERR_INTEGRITY_FAILURE"
            case .invalidSubcommand: "CTAP2_ERR_INVALID_SUBCOMMAND"
            case .userVerificationInvalid: "CTAP2_ERR_UV_INVALID"
            case .unauthorizedPermission: "CTAP2_ERR_UNAUTHORIZED_PERMISSION"
            case .other: "CTAP1_ERR_OTHER"
            default: "CTAP status"
            }
        return "\(name) (0x\([rawValue].hexString))"
    }
}
