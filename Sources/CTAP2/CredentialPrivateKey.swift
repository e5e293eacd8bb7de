import Crypto
import Foundation
import WebAuthn
import _CryptoExtras

/// A credential's signing key and the COSE algorithm it was made for: ES256 or ESP256 on P-256, EdDSA or Ed25519 on
/// Ed25519 (the fully specified identifiers of RFC 9864 name the same keys and signatures).
public enum CredentialPrivateKey: Sendable {
    case p256(P256.Signing.PrivateKey, algorithm: COSEAlgorithm)
    case ed25519(Curve25519.Signing.PrivateKey, algorithm: COSEAlgorithm)

    /// The algorithms this authenticator makes keys for, in the order getInfo lists them.
    public static let algorithms: [COSEAlgorithm] = [.es256, .eddsa, .esp256, .ed25519]

    /// A new key for `algorithm` from `randomBytes` (32 bytes at a time); nil for an algorithm not in ``algorithms``.
    /// Importing random bytes skips the FIPS pairwise self-test and compact-form retries of swift-crypto's P-256
    /// generator (see Tools/bench).
    public static func generate(_ algorithm: COSEAlgorithm, randomBytes: (Int) -> [UInt8]) -> Self? {
        switch algorithm {
        case .es256, .esp256:
            while true {
                if let key = try? P256.Signing.PrivateKey(rawRepresentation: randomBytes(32)) {
                    return .p256(key, algorithm: algorithm)
                }
            }
        case .eddsa, .ed25519:
            // Every 32-byte string is an Ed25519 seed.
            guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: randomBytes(32)) else { return nil }
            return .ed25519(key, algorithm: algorithm)
        default:
            return nil
        }
    }

    /// The COSE algorithm the key was made for, as its public key and attestation carry it.
    public var algorithm: COSEAlgorithm {
        switch self {
        case .p256(_, let algorithm), .ed25519(_, let algorithm): algorithm
        }
    }

    /// The P-256 key; nil for an Ed25519 one.
    public var p256: P256.Signing.PrivateKey? {
        if case .p256(let key, _) = self { key } else { nil }
    }

    /// The public key as COSE writes it.
    public var publicKey: COSEKey {
        switch self {
        case .p256(let key, let algorithm): COSEKey(publicKey: key.publicKey, algorithm: algorithm)
        case .ed25519(let key, let algorithm): COSEKey(publicKey: key.publicKey, algorithm: algorithm)
        }
    }

    /// The private key's 32 bytes: the P-256 scalar or the Ed25519 seed (the input of the credential's derived
    /// secrets).
    public var rawRepresentation: Data {
        switch self {
        case .p256(let key, _): key.rawRepresentation
        case .ed25519(let key, _): key.rawRepresentation
        }
    }

    /// Signs `authenticatorData ‖ clientDataHash`: ECDSA in DER (the two parts hashed in two updates, without
    /// joining them), or the 64 bytes of Ed25519.
    public func signature(_ authenticatorData: [UInt8], _ clientDataHash: [UInt8]) throws -> [UInt8] {
        switch self {
        case .p256(let key, _):
            var hasher = SHA256()
            hasher.update(data: authenticatorData)
            hasher.update(data: clientDataHash)
            return ECDSASignatureDER.encode(raw: Array(try key.signature(for: hasher.finalize()).rawRepresentation))
        case .ed25519(let key, _):
            return Array(try key.signature(for: authenticatorData + clientDataHash))
        }
    }

    // MARK: As stores keep it

    /// The bytes a store seals: ES256 keys as their 32-byte scalar, as every store before EdDSA kept them (so those
    /// rows read unchanged); any other key as a tag, the algorithm and the 32 key bytes: `0x01, alg as Int8, key`.
    public var storedRepresentation: [UInt8] {
        if case .p256(let key, .es256) = self { return Array(key.rawRepresentation) }
        return [Self.taggedFormat, UInt8(bitPattern: Int8(algorithm.rawValue))] + Array(rawRepresentation)
    }

    /// Reads ``storedRepresentation``; nil when the bytes are not a key of a supported algorithm.
    public init?(storedRepresentation bytes: [UInt8]) {
        if bytes.count == 32 {
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes) else { return nil }
            self = .p256(key, algorithm: .es256)
            return
        }
        guard bytes.count == 34, bytes[0] == Self.taggedFormat else { return nil }
        let algorithm = COSEAlgorithm(rawValue: Int(Int8(bitPattern: bytes[1])))
        let key = Array(bytes[2...])
        switch algorithm {
        case .es256, .esp256:
            guard let p256 = try? P256.Signing.PrivateKey(rawRepresentation: key) else { return nil }
            self = .p256(p256, algorithm: algorithm)
        case .eddsa, .ed25519:
            guard let ed25519 = try? Curve25519.Signing.PrivateKey(rawRepresentation: key) else { return nil }
            self = .ed25519(ed25519, algorithm: algorithm)
        default:
            return nil
        }
    }

    static let taggedFormat: UInt8 = 0x01

    // MARK: PKCS #8, as Credential Exchange carries keys

    /// The key as PKCS #8 DER (RFC 5958; RFC 8410 for Ed25519), as swift-crypto writes it.
    public var pkcs8DERRepresentation: [UInt8] {
        switch self {
        case .p256(let key, _): Array(key.derRepresentation)
        case .ed25519(let key, _): Array(key.derRepresentation)
        }
    }

    /// Reads a PKCS #8 key: an Ed25519 one (EdDSA unless `algorithm` says Ed25519) or a P-256 one (ES256 unless it
    /// says ESP256); nil otherwise, or when `algorithm` does not fit the key.
    public init?(pkcs8DER bytes: [UInt8], algorithm: COSEAlgorithm? = nil) {
        if let key = try? Curve25519.Signing.PrivateKey(derRepresentation: bytes) {
            guard algorithm == nil || algorithm == .eddsa || algorithm == .ed25519 else { return nil }
            self = .ed25519(key, algorithm: algorithm ?? .eddsa)
            return
        }
        guard algorithm == nil || algorithm == .es256 || algorithm == .esp256,
            let key = try? P256.Signing.PrivateKey(derRepresentation: bytes)
        else { return nil }
        self = .p256(key, algorithm: algorithm ?? .es256)
    }

    /// Reads a PEM `PRIVATE KEY` (PKCS#8), as ``init(pkcs8DER:algorithm:)`` reads its DER.
    public init?(pkcs8PEM text: String) {
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) {
            self = .p256(key, algorithm: .es256)
        } else if let key = try? Curve25519.Signing.PrivateKey(pemRepresentation: text) {
            self = .ed25519(key, algorithm: .eddsa)
        } else {
            return nil
        }
    }
}
