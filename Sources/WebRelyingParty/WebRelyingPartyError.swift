import Basics
import RelyingParty

/// Why the web relying party refused a request: a stable ``Code``, a message for people and the HTTP status.
///
/// Answered as `{"error": code, "message": message}`. Equality uses the code only, as ``RelyingPartyError``'s does.
public struct WebRelyingPartyError: CodedError {
    /// An open set of codes: this server's own, and every ``RelyingPartyError/Code`` of the verifier under its
    /// own name (`challengeMismatch`, `originMismatch`, `unknownCredential`, …).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The verifier's code under its own name.
        public init(_ code: RelyingPartyError.Code) { rawValue = code.rawValue }
        public var description: String { rawValue }

        /// The body is not a JSON object (400).
        public static let badJSON = Code(rawValue: "badJSON")
        /// An options request or client report has a missing or out-of-bounds member (400).
        public static let invalidRequest = Code(rawValue: "invalidRequest")
        /// A registration or authentication response is not in its WebAuthn JSON form (400).
        public static let malformedResponse = Code(rawValue: "malformedResponse")
        /// clientDataJSON names a challenge this server never issued, or forgot (400).
        public static let unknownChallenge = Code(rawValue: "unknownChallenge")
        /// The challenge was issued but its lifetime is over (400).
        public static let challengeExpired = Code(rawValue: "challengeExpired")
        /// The challenge was dropped because more ceremonies were started after it than the server keeps (400).
        public static let challengeEvicted = Code(rawValue: "challengeEvicted")
        /// The challenge was already used by an earlier verification, successful or not (409).
        public static let challengeReplayed = Code(rawValue: "challengeReplayed")
        /// The challenge belongs to the other ceremony (a registration challenge in an authentication) (400).
        public static let ceremonyMismatch = Code(rawValue: "ceremonyMismatch")
        /// The new credential's ID is already registered (WebAuthn §7.1 step 26) (409).
        public static let credentialAlreadyRegistered = Code(rawValue: "credentialAlreadyRegistered")
        /// Authentication options were asked for an account with no registered passkey (400).
        public static let unknownUser = Code(rawValue: "unknownUser")
        /// No such path (404).
        public static let notFound = Code(rawValue: "notFound")
        /// The path exists but not with this method (405).
        public static let methodNotAllowed = Code(rawValue: "methodNotAllowed")
        /// The body is larger than the server accepts (413).
        public static let payloadTooLarge = Code(rawValue: "payloadTooLarge")
        /// A POST body that is not `application/json` (415).
        public static let unsupportedMediaType = Code(rawValue: "unsupportedMediaType")
        /// The HTTP request itself could not be read (400).
        public static let badRequest = Code(rawValue: "badRequest")
        /// The request did not arrive whole, body included, within the server's request timeout (408).
        public static let requestTimeout = Code(rawValue: "requestTimeout")
        /// The request headers are larger or more numerous than the server accepts (431).
        public static let headersTooLarge = Code(rawValue: "headersTooLarge")
        /// The `Host` header names a host this relying party does not serve, or is missing (421): a page that reached
        /// the server by DNS rebinding names its own domain there.
        public static let misdirectedRequest = Code(rawValue: "misdirectedRequest")
        /// Registration options for a user name that already has a passkey, from a browser not signed in as that
        /// user (403).
        public static let signInRequired = Code(rawValue: "signInRequired")
        /// No passkey with this credential ID is registered here (404): nothing to delete.
        public static let noSuchPasskey = Code(rawValue: "noSuchPasskey")
        /// A password sign-in with a user name that has no password here or a wrong password: the same answer for
        /// both, so that it tells nobody which user names exist (400).
        public static let signInFailed = Code(rawValue: "signInFailed")
        /// A password sign-up for a user name that already has an account here (409).
        public static let userExists = Code(rawValue: "userExists")
        /// The verification succeeded but the state file could not be written, so nothing was kept (500).
        public static let stateNotSaved = Code(rawValue: "stateNotSaved")

        /// The HTTP status this code is answered with.
        public var status: Int {
            switch self {
            case .challengeReplayed, .credentialAlreadyRegistered, .userExists: 409
            case .signInRequired: 403
            case .notFound, .noSuchPasskey: 404
            case .methodNotAllowed: 405
            case .requestTimeout: 408
            case .payloadTooLarge: 413
            case .unsupportedMediaType: 415
            case .misdirectedRequest: 421
            case .headersTooLarge: 431
            case .stateNotSaved: 500
            default: 400
            }
        }
    }

    /// The stable kind of refusal.
    public var code: Code
    /// A human-readable explanation; not stable.
    public var message: String

    /// An error of kind `code`, explained by `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The verifier's refusal under its own code.
    public init(_ error: RelyingPartyError) {
        self.init(Code(error.code), error.reason)
    }

    /// The HTTP status to answer with.
    public var status: Int { code.status }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
