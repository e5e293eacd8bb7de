import CTAP2
import JSON

/// The exception a page would see, by name: the `DOMException` names of WebAuthn Level 3 §5.1.3.1 and §5.1.4.3
/// ("Create/Get Request Exceptions"), plus the simple exception `TypeError` and the `SyntaxError` that `JSON.parse`
/// throws before the options reach `parseCreationOptionsFromJSON`.
public enum DOMExceptionName: String, Hashable, Sendable, CaseIterable {
    /// The catch-all: the user said no, nothing could answer, the time ran out (WebAuthn L3 §5.1.3 last step).
    case notAllowedError = "NotAllowedError"
    /// An authenticator holds one of `excludeCredentials` and the user consented (§5.1.3, InvalidStateError).
    case invalidStateError = "InvalidStateError"
    /// The RP ID is not the origin's effective domain or a registrable suffix of it (§5.1.3 step 8).
    case securityError = "SecurityError"
    /// No algorithm this client supports, or an extension input the extension refuses (§5.1.3 step 10).
    case notSupportedError = "NotSupportedError"
    /// The caller abandoned the ceremony (§5.6, `AbortSignal`).
    case abortError = "AbortError"
    /// The options are not a valid dictionary: a required member is missing or a member has the wrong type (WebIDL).
    case typeError = "TypeError"
    /// A base64url member does not decode (§5.1.8 `parseCreationOptionsFromJSON`, §5.1.9 `parseRequestOptionsFromJSON`).
    case encodingError = "EncodingError"
    /// The text is not JSON (`JSON.parse`), or a prf `evalByCredential` key names no allowed credential (§10.1.4).
    case syntaxError = "SyntaxError"

    /// The exit status the CLI uses for this name: 10 to 17, one each, so scripts can tell them apart
    /// (`Docs/Client.md`).
    public var exitStatus: Int32 {
        switch self {
        case .notAllowedError: 10
        case .invalidStateError: 11
        case .securityError: 12
        case .notSupportedError: 13
        case .abortError: 14
        case .typeError: 15
        case .encodingError: 16
        case .syntaxError: 17
        }
    }
}

/// Why a ceremony failed: the `DOMException` name a browser would reject with, and the reason, named.
///
/// Equality is by reason. The description is one line, `Name: reason`, and never holds a PIN, passphrase or key.
public struct ClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, one case per rule that can fail.
    public enum Reason: Hashable, Sendable {
        // SyntaxError
        /// The options text is not JSON; `offset` is the byte where parsing stopped.
        case malformedJSON(offset: Int, expected: String)
        /// A prf `evalByCredential` key is empty, not base64url, or not an allowed credential ID.
        case prfCredentialNotAllowed(String)

        // TypeError
        /// The options text is longer than the engine reads.
        case inputTooLarge(bytes: Int, limit: Int)
        /// A required member is absent (or null).
        case missingMember(String)
        /// A member has the wrong JSON type.
        case wrongType(String, expected: String)
        /// A member is outside the bounds WebAuthn or this engine sets (`user.id` 1–64 bytes, list sizes, depth).
        case outOfBounds(String, String)

        // EncodingError
        /// A member that must be base64url is not.
        case notBase64URL(String)

        // SecurityError
        /// The injected RP ID check refused the RP ID for the origin.
        case relyingPartyIDRefused(String)

        // NotSupportedError
        /// `pubKeyCredParams` names no `public-key` algorithm this client supports (``COSEKey/algorithms``).
        case noSupportedAlgorithm
        /// An extension input the extension's client processing refuses.
        case extensionInputRefused(String)

        // NotAllowedError
        /// No available authenticator can answer this request, and why.
        case noEligibleAuthenticator(String)
        /// `immediate` or `preferImmediatelyAvailableCredentials`: nothing on this computer can answer at once.
        case noImmediatelyAvailableCredential
        /// `immediate` mediation with a non-empty `allowCredentials`.
        case immediateWithAllowList
        /// The user closed the chooser or declined.
        case userCancelled
        /// The ceremony's timer ran out (milliseconds).
        case timedOut(milliseconds: Int)
        /// Reaching the authenticator failed (QR code, Bluetooth, tunnel, USB).
        case transport(String)
        /// The authenticator's answer is malformed or does not fit the request.
        case invalidResponse(String)
        /// User verification was required and the authenticator cannot verify the user.
        case userVerificationUnavailable

        // NotAllowedError, InvalidStateError or NotSupportedError, by status
        /// The authenticator answered with a CTAP error status.
        case authenticator(CTAPError)

        // AbortError
        /// The caller cancelled the ceremony.
        case aborted
    }

    public var reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    /// The `DOMException` name (or `TypeError`) for the reason.
    public var name: DOMExceptionName {
        switch reason {
        case .malformedJSON, .prfCredentialNotAllowed: .syntaxError
        case .inputTooLarge, .missingMember, .wrongType, .outOfBounds: .typeError
        case .notBase64URL: .encodingError
        case .relyingPartyIDRefused: .securityError
        case .noSupportedAlgorithm, .extensionInputRefused: .notSupportedError
        case .noEligibleAuthenticator, .noImmediatelyAvailableCredential, .immediateWithAllowList, .userCancelled,
            .timedOut, .transport, .invalidResponse, .userVerificationUnavailable:
            .notAllowedError
        case .authenticator(let status): Self.name(for: status)
        case .aborted: .abortError
        }
    }

    /// The exception a browser raises for a CTAP status, as Chromium maps them: `device/fido`
    /// (`fido_device_authenticator.cc`, ConvertDeviceResponseCodeToMakeCredentialStatus / …GetAssertionStatus) turns
    /// CTAP2_ERR_CREDENTIAL_EXCLUDED into kUserConsentButCredentialExcluded and everything else into a status that
    /// `content/browser/webauth/authenticator_common_impl.cc` (OnRegisterResponse, OnSignResponse) reports as
    /// CREDENTIAL_EXCLUDED or NOT_ALLOWED_ERROR; Blink's AuthenticatorStatusToDOMException
    /// (`credentials_container.cc`) makes those InvalidStateError and NotAllowedError. CTAP2_ERR_UNSUPPORTED_ALGORITHM
    /// is NotSupportedError, as WebAuthn L3 §5.1.3.1 lists it ("the authenticator did not support any of the signature
    /// algorithms") and Blink's ALGORITHM_UNSUPPORTED is; desktop Chromium shows its own dialog and rejects with
    /// NotAllowedError instead.
    static func name(for status: CTAPError) -> DOMExceptionName {
        switch status {
        case .credentialExcluded: .invalidStateError
        case .unsupportedAlgorithm: .notSupportedError
        default: .notAllowedError
        }
    }

    /// The CLI's exit status for this error (`DOMExceptionName.exitStatus`).
    public var exitStatus: Int32 { name.exitStatus }

    public var description: String { "\(name.rawValue): \(explanation)" }

    /// The reason in words, without the name: one line, whatever the options held (control characters in member
    /// names or values are written as `\u{…}`).
    public var explanation: String {
        var line = ""
        for scalar in words.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}"
                || scalar == "\u{2029}"
            {
                line += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                line.unicodeScalars.append(scalar)
            }
        }
        return line
    }

    private var words: String {
        switch reason {
        case .malformedJSON(let offset, let expected):
            "the options are not JSON: expected \(expected) at byte \(offset)"
        case .prfCredentialNotAllowed(let key):
            "prf evalByCredential key \"\(key)\" is not the base64url ID of a credential in allowCredentials"
        case .inputTooLarge(let bytes, let limit): "the options are \(bytes) bytes; at most \(limit) are read"
        case .missingMember(let path): "\(path) is required"
        case .wrongType(let path, let expected): "\(path) must be \(expected)"
        case .outOfBounds(let path, let bound): "\(path): \(bound)"
        case .notBase64URL(let path): "\(path) is not base64url"
        case .relyingPartyIDRefused(let why): why
        case .noSupportedAlgorithm:
            "pubKeyCredParams names no public-key algorithm this client supports (ES256, ESP256, EdDSA, Ed25519, RS256)"
        case .extensionInputRefused(let why): why
        case .noEligibleAuthenticator(let why): why
        case .noImmediatelyAvailableCredential: "no passkey for this site is available on this computer"
        case .immediateWithAllowList: "immediate mediation does not take allowCredentials"
        case .userCancelled: "the user cancelled"
        case .timedOut(let milliseconds): "the ceremony timed out after \(milliseconds) ms"
        case .transport(let why): "the authenticator could not be reached: \(why)"
        case .invalidResponse(let why): "the authenticator's answer was refused: \(why)"
        case .userVerificationUnavailable:
            "user verification is required and no chosen authenticator can verify the user"
        case .authenticator(let status): "the authenticator answered \(status)\(Self.meaning(of: status))"
        case .aborted: "the ceremony was aborted"
        }
    }

    /// What a CTAP status means for the user, for the statuses a ceremony commonly ends with.
    private static func meaning(of status: CTAPError) -> String {
        switch status {
        case .credentialExcluded: ": a passkey for this account is already on it"
        case .noCredentials: ": it holds no passkey for this site"
        case .operationDenied: ": the user declined"
        case .userActionTimeout: ": nobody answered in time"
        case .keepaliveCancel: ": the request was cancelled"
        case .unsupportedAlgorithm: ": it supports none of the requested algorithms"
        case .pinBlocked, .pinAuthBlocked: ": the PIN is blocked"
        case .userVerificationBlocked: ": user verification is blocked"
        case .keyStoreFull: ": it has no room for another passkey"
        default: ""
        }
    }
}

extension ClientError {
    /// The exception `JSON.parse` raises for text the JSON reader refused: `SyntaxError`, or `TypeError` for text
    /// longer than the engine reads.
    public init(_ error: JSONError) {
        switch error {
        case .malformed(let offset, let expected): self.init(.malformedJSON(offset: offset, expected: expected))
        case .tooLarge(let bytes, let limit): self.init(.inputTooLarge(bytes: bytes, limit: limit))
        }
    }
}

extension JSONValue {
    /// Options text read as `JSON.parse` reads it, refused with the exception a page would see.
    init(parsingOptions json: [UInt8]) throws(ClientError) {
        do {
            self = try JSONValue(parsing: json)
        } catch {
            throw ClientError(error)
        }
    }
}
