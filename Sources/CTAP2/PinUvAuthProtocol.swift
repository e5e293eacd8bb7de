import Basics
import CBOR
import Crypto
import Foundation
import _CryptoExtras

/// A PIN/UV auth protocol (CTAP 2.1 §6.5.6 and §6.5.7): how a platform and the authenticator agree on a
/// shared secret, encrypt PINs and tokens with it, and authenticate messages with it.
///
/// Pure: key pairs and IVs come from the caller, so every operation is checked against known answers.
public struct PinUvAuthProtocol: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Protocol one: SHA-256 KDF, AES-256-CBC with a zero IV, HMAC-SHA-256 truncated to 16 bytes.
    public static let one = PinUvAuthProtocol(rawValue: 1)
    /// Protocol two: HKDF-SHA-256 into an HMAC key and an AES key, random IVs, full 32-byte HMAC.
    public static let two = PinUvAuthProtocol(rawValue: 2)

    /// The protocols this authenticator implements, most preferred first (getInfo key 0x06).
    public static let supported: [PinUvAuthProtocol] = [.two, .one]

    public var isSupported: Bool { Self.supported.contains(self) }

    public var description: String { "PIN/UV auth protocol \(rawValue)" }

    /// The length of a shared secret from `kdf`: 32 bytes for protocol one, 64 for protocol two.
    public var sharedSecretLength: Int { self == .one ? 32 : 64 }

    /// What `encrypt` adds in front of the ciphertext: nothing for protocol one, the IV for protocol two.
    public var ivLength: Int { self == .one ? 0 : 16 }

    /// Why a PIN/UV auth protocol operation failed. Callers map these to the status code their step names.
    public enum Failure: Error, Hashable, Sendable {
        /// The platform's key agreement key is not a P-256 point in the COSE layout CTAP2 uses.
        case invalidPublicKey
        /// A ciphertext is empty, not whole AES blocks, or shorter than its IV.
        case invalidCiphertextLength
        /// A key has the wrong length for this protocol.
        case invalidKeyLength
    }

    // MARK: Key agreement

    /// The authenticator's key agreement key as getKeyAgreement returns it: COSE EC2 P-256 with alg -25
    /// (ECDH-ES+HKDF-256, "although this is not the algorithm actually used", CTAP 2.1 §6.5.6).
    public static func coseKey(_ publicKey: P256.KeyAgreement.PublicKey) -> CBORValue {
        let raw = Array(publicKey.rawRepresentation)
        return [1: 2, 3: -25, -1: 1, -2: .bytes(Array(raw[..<32])), -3: .bytes(Array(raw[32...]))]
    }

    /// Reads a platform's key agreement key: `{1: 2, 3: -25, -1: 1, -2: x, -3: y}`, a point on P-256.
    public static func platformKey(_ cose: CBORValue) throws(Failure) -> P256.KeyAgreement.PublicKey {
        guard let map = cose.mapValue, map[1] == 2, map[-1] == 1, map[3] == -25,
            let x = map[-2]?.bytesValue, let y = map[-3]?.bytesValue, x.count == 32, y.count == 32
        else { throw .invalidPublicKey }
        do {
            return try P256.KeyAgreement.PublicKey(rawRepresentation: x + y)
        } catch {
            throw .invalidPublicKey
        }
    }

    /// `ecdh(peerCoseKey)`: the x coordinate of the shared point, through this protocol's KDF.
    public func sharedSecret(
        privateKey: P256.KeyAgreement.PrivateKey, platformKey cose: CBORValue
    ) throws(Failure) -> [UInt8] {
        let peer = try Self.platformKey(cose)
        let z: [UInt8]
        do {
            z = try privateKey.sharedSecretFromKeyAgreement(with: peer).withUnsafeBytes { Array($0) }
        } catch {
            throw .invalidPublicKey
        }
        return kdf(z)
    }

    /// `kdf(Z)`: SHA-256(Z) for protocol one; for protocol two, HKDF-SHA-256 with 32 zero bytes of salt,
    /// once with info "CTAP2 HMAC key" and once with "CTAP2 AES key", concatenated.
    public func kdf(_ z: [UInt8]) -> [UInt8] {
        if self == .one { return SHA256.hash(data: z).bytes }
        let salt = [UInt8](repeating: 0, count: 32)
        let input = SymmetricKey(data: z)
        let hmacKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: input, salt: salt, info: Array("CTAP2 HMAC key".utf8), outputByteCount: 32)
        let aesKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: input, salt: salt, info: Array("CTAP2 AES key".utf8), outputByteCount: 32)
        return hmacKey.withUnsafeBytes { Array($0) } + aesKey.withUnsafeBytes { Array($0) }
    }

    // MARK: Encryption

    /// `encrypt(key, plaintext)`: AES-256-CBC without padding. Protocol one uses the whole 32-byte key and a zero
    /// IV; protocol two uses the key's last 32 bytes and prepends `iv` (16 fresh random bytes from the caller).
    public func encrypt(key: [UInt8], plaintext: [UInt8], iv: [UInt8]) throws(Failure) -> [UInt8] {
        guard !plaintext.isEmpty, plaintext.count % 16 == 0 else { throw .invalidCiphertextLength }
        let aesKey = try self.aesKey(key)
        let usedIV = self == .one ? [UInt8](repeating: 0, count: 16) : iv
        guard usedIV.count == 16 else { throw .invalidKeyLength }
        do {
            let ciphertext = try AES._CBC.encrypt(
                plaintext, using: SymmetricKey(data: aesKey), iv: AES._CBC.IV(ivBytes: usedIV), noPadding: true)
            return (self == .one ? [] : usedIV) + Array(ciphertext)
        } catch {
            throw .invalidCiphertextLength
        }
    }

    /// `decrypt(key, demCiphertext)`: the inverse of `encrypt`. Fails when the ciphertext is not whole blocks
    /// (after the IV for protocol two) or is empty.
    public func decrypt(key: [UInt8], ciphertext: [UInt8]) throws(Failure) -> [UInt8] {
        let aesKey = try self.aesKey(key)
        let body = Array(ciphertext.dropFirst(ivLength))
        guard ciphertext.count > ivLength, body.count % 16 == 0 else { throw .invalidCiphertextLength }
        let iv = self == .one ? [UInt8](repeating: 0, count: 16) : Array(ciphertext.prefix(16))
        do {
            return Array(
                try AES._CBC.decrypt(
                    body, using: SymmetricKey(data: aesKey), iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        } catch {
            throw .invalidCiphertextLength
        }
    }

    // MARK: Authentication

    /// `authenticate(key, message)`: HMAC-SHA-256. Protocol one keys it with the whole key and keeps the first
    /// 16 bytes; protocol two keys it with the first 32 bytes (the HMAC half of a shared secret, or a whole
    /// pinUvAuthToken) and keeps all 32.
    public func authenticate(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let hmacKey = self == .one ? key : Array(key.prefix(32))
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: hmacKey))
        let bytes = Array(mac)
        return self == .one ? Array(bytes.prefix(16)) : bytes
    }

    /// `verify(key, message, signature)`: whether `signature` is `authenticate(key, message)`, compared in
    /// constant time. A signature of the wrong length never verifies.
    public func verify(key: [UInt8], message: [UInt8], signature: [UInt8]) -> Bool {
        constantTimeEqual(authenticate(key: key, message: message), signature)
    }

    private func aesKey(_ key: [UInt8]) throws(Failure) -> [UInt8] {
        switch self {
        case .one:
            guard key.count == 32 else { throw .invalidKeyLength }
            return key
        default:
            guard key.count == 64 else { throw .invalidKeyLength }
            return Array(key[32...])
        }
    }
}
