import Basics
import CBOR
import Crypto
import Foundation

/// The platform's side of authenticatorClientPIN (CTAP 2.1 §6.5.5): the messages a platform sends to learn the PIN
/// retry counter and to turn a PIN into a pinUvAuthToken, and what it makes of the answers. Pure: the platform's key
/// agreement key and every IV come from the caller.
extension CTAPClient {
    /// authenticatorClientPIN getPINRetries: `{1: pinUvAuthProtocol, 2: 0x01}`.
    public static func getPINRetriesMessage(pinUvAuthProtocol: PinUvAuthProtocol) -> [UInt8] {
        [CTAPCommand.clientPIN.rawValue] + CBORValue.map([1: .int(pinUvAuthProtocol.rawValue), 2: 1]).encoded()
    }

    /// The PIN retries left (key 3) and, from CTAP 2.1 keys, whether a power cycle is needed before the next try
    /// (key 4), from a getPINRetries answer. A non-zero status is thrown.
    public static func pinRetries(from response: [UInt8]) throws(CTAPError) -> (retries: Int, powerCycleNeeded: Bool?) {
        let map = try lenientBody(of: response).parameters()
        let retries = try map.required(3).int()
        guard retries >= 0 else { throw .invalidParameter }
        return (retries, try map.optional(4)?.bool())
    }

    /// Like ``body(of:)``, but accepting CBOR that is not in canonical form: what a platform reads from a key it did
    /// not build.
    static func lenientBody(of response: [UInt8]) throws(CTAPError) -> CBORValue {
        guard let status = response.first else { throw .invalidLength }
        guard status == 0 else { throw CTAPError(rawValue: status) }
        guard response.count > 1 else { throw .invalidLength }
        do {
            return try CBORDecoder(requiresCanonicalForm: false).decode(response.dropFirst())
        } catch {
            throw CTAPError(error)
        }
    }
}

/// What the platform says when it asks the user for an authenticator's PIN.
public struct PINRequest: Hashable, Sendable {
    /// The key the PIN is for (`/dev/hidraw3`, `udp://127.0.0.1:8111`), when the platform names it.
    public var key: String?
    /// The relying party of the request, when the token is for one.
    public var relyingPartyID: String?
    /// How many wrong PINs the key still accepts before it blocks the PIN, when it said.
    public var retriesLeft: Int?
    /// Whether the previous PIN entered for this request was wrong.
    public var previousAttemptWasWrong: Bool

    public init(
        key: String? = nil, relyingPartyID: String? = nil, retriesLeft: Int? = nil,
        previousAttemptWasWrong: Bool = false
    ) {
        self.key = key
        self.relyingPartyID = relyingPartyID
        self.retriesLeft = retriesLeft
        self.previousAttemptWasWrong = previousAttemptWasWrong
    }
}

/// A pinUvAuthToken as the platform holds it: the secret the authenticator issued, and the protocol that issued it.
/// It signs requests (`pinUvAuthParam`); `description` and `dump` never show it.
public struct PinUvAuthToken: Sendable, CustomStringConvertible, CustomReflectable {
    /// The protocol whose `authenticate` signs with this token.
    public let pinUvAuthProtocol: PinUvAuthProtocol
    let secret: [UInt8]

    /// `authenticate(token, message)`: the pinUvAuthParam of a request whose authenticated bytes are `message` (the
    /// clientDataHash for makeCredential and getAssertion).
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        pinUvAuthProtocol.authenticate(key: secret, message: message)
    }

    public var description: String { "pinUvAuthToken (\(pinUvAuthProtocol), \(secret.count) bytes)" }
    public var customMirror: Mirror { Mirror(self, children: ["pinUvAuthProtocol": pinUvAuthProtocol]) }
}

/// One key agreement between a platform and an authenticator (CTAP 2.1 §6.5.6, §6.5.7): the platform's half of a
/// PIN/UV auth protocol, from getKeyAgreement to a pinUvAuthToken.
///
/// ```swift
/// let session = try PinUvAuthSession(
///     pinUvAuthProtocol: .two, keyAgreementResponse: await send(CTAPClient.getKeyAgreementMessage()),
///     platformKey: P256.KeyAgreement.PrivateKey())
/// let answer = await send(try session.pinTokenMessage(pin: pin, permissions: .getAssertion,
///                                                     relyingPartyID: "example.com", iv: random(16)))
/// let token = try session.token(from: answer)
/// ```
public struct PinUvAuthSession: Sendable, CustomReflectable {
    /// The protocol of this session.
    public let pinUvAuthProtocol: PinUvAuthProtocol
    /// The platform's public key as the keyAgreement parameter (3) carries it.
    public let keyAgreement: CBORValue
    private let sharedSecret: [UInt8]

    /// Agrees on a shared secret with the key the authenticator sent in its getKeyAgreement answer.
    ///
    /// - Parameters:
    ///   - keyAgreementResponse: The whole answer: status byte, then `{1: COSE key}`.
    ///   - platformKey: A fresh key pair for this session.
    /// - Throws: the answer's status if it is not success; CTAP1_ERR_INVALID_PARAMETER if the authenticator's key is
    ///   not a P-256 point in the COSE form CTAP2 uses; CTAP2_ERR_CBOR_UNEXPECTED_TYPE or
    ///   CTAP2_ERR_MISSING_PARAMETER for an answer of the wrong shape.
    public init(
        pinUvAuthProtocol: PinUvAuthProtocol, keyAgreementResponse: [UInt8], platformKey: P256.KeyAgreement.PrivateKey
    ) throws(CTAPError) {
        guard pinUvAuthProtocol.isSupported else { throw .invalidParameter }
        let authenticatorKey = try CTAPClient.lenientBody(of: keyAgreementResponse).parameters().required(1)
        do {
            sharedSecret = try pinUvAuthProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorKey)
        } catch {
            throw .invalidParameter
        }
        self.pinUvAuthProtocol = pinUvAuthProtocol
        keyAgreement = PinUvAuthProtocol.coseKey(platformKey.publicKey)
    }

    /// `LEFT(SHA-256(PIN), 16)` of the PIN in UTF-8 after Unicode normalization form C, as the authenticator stored it
    /// when the PIN was set.
    ///
    /// - Throws: CTAP2_ERR_PIN_POLICY_VIOLATION for a PIN no authenticator can have (fewer than 4 code points, more
    ///   than 63 bytes): checked here so that it costs no retry.
    public static func pinHash(_ pin: String) throws(CTAPError) -> [UInt8] {
        let normalized = pin.precomposedStringWithCanonicalMapping
        let bytes = Array(normalized.utf8)
        guard normalized.unicodeScalars.count >= 4, bytes.count <= 63 else { throw .pinPolicyViolation }
        return Array(SHA256.hash(data: bytes).bytes.prefix(16))
    }

    /// getPinUvAuthTokenUsingPinWithPermissions (subcommand 0x09) for `permissions`, bound to `relyingPartyID` when
    /// given; or, when `permissions` is nil, getPinToken (0x05), which CTAP 2.0 keys know and which takes neither.
    ///
    /// - Parameter iv: 16 fresh random bytes (protocol two; protocol one ignores them).
    /// - Throws: CTAP2_ERR_PIN_POLICY_VIOLATION for an impossible PIN (see ``pinHash(_:)``).
    public func pinTokenMessage(
        pin: String, permissions: PinUvAuthPermissions?, relyingPartyID: String?, iv: [UInt8]
    ) throws(CTAPError) -> [UInt8] {
        let pinHash = try Self.pinHash(pin)
        let pinHashEnc: [UInt8]
        do {
            pinHashEnc = try pinUvAuthProtocol.encrypt(key: sharedSecret, plaintext: pinHash, iv: iv)
        } catch {
            throw .invalidParameter  // an IV that is not 16 bytes
        }
        var parameters: [CBORValue: CBORValue] = [
            1: .int(pinUvAuthProtocol.rawValue), 2: permissions == nil ? 0x05 : 0x09, 3: keyAgreement,
            6: .bytes(pinHashEnc),
        ]
        if let permissions {
            parameters[9] = .int(permissions.rawValue)
            if let relyingPartyID { parameters[0x0A] = .text(relyingPartyID) }
        }
        return [CTAPCommand.clientPIN.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// The token in a getPinToken or getPinUvAuthToken… answer (`{2: pinUvAuthToken encrypted}`).
    ///
    /// - Throws: the answer's status if it is not success (CTAP2_ERR_PIN_INVALID and the other PIN errors);
    ///   CTAP1_ERR_INVALID_LENGTH when the decrypted token has a length its protocol cannot issue (protocol one: a
    ///   multiple of 16 bytes; protocol two: 32 bytes).
    public func token(from response: [UInt8]) throws(CTAPError) -> PinUvAuthToken {
        let encrypted = try CTAPClient.lenientBody(of: response).parameters().required(2).bytes()
        let secret: [UInt8]
        do {
            secret = try pinUvAuthProtocol.decrypt(key: sharedSecret, ciphertext: encrypted)
        } catch {
            throw .invalidLength
        }
        let valid = pinUvAuthProtocol == .two ? secret.count == 32 : !secret.isEmpty && secret.count % 16 == 0
        guard valid else { throw .invalidLength }
        return PinUvAuthToken(pinUvAuthProtocol: pinUvAuthProtocol, secret: secret)
    }

    public var customMirror: Mirror { Mirror(self, children: ["pinUvAuthProtocol": pinUvAuthProtocol]) }
}
