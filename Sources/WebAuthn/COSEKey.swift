import CBOR
import Crypto
import Foundation
import _CryptoExtras

/// A COSE algorithm identifier (IANA "COSE Algorithms"). Unknown values survive as data.
public struct COSEAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA with SHA-256, on P-256 in WebAuthn (RFC 9053).
    public static let es256 = COSEAlgorithm(rawValue: -7)
    /// EdDSA (RFC 9053), Ed25519 in WebAuthn and CTAP.
    public static let eddsa = COSEAlgorithm(rawValue: -8)
    /// ECDSA on P-256 with SHA-256, fully specified (RFC 9864): ES256 restricted to P-256.
    public static let esp256 = COSEAlgorithm(rawValue: -9)
    /// Ed25519, fully specified (RFC 9864): EdDSA restricted to Ed25519.
    public static let ed25519 = COSEAlgorithm(rawValue: -19)
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8812).
    public static let rs256 = COSEAlgorithm(rawValue: -257)

    /// The algorithm's name, as the IANA registry spells it: `ES256`, `EdDSA`, `ESP256`, `Ed25519`, `RS256`, or the
    /// number.
    public var description: String {
        switch self {
        case .es256: "ES256"
        case .eddsa: "EdDSA"
        case .esp256: "ESP256"
        case .ed25519: "Ed25519"
        case .rs256: "RS256"
        default: String(rawValue)
        }
    }
}

/// Why a COSE_Key was refused.
public enum COSEError: Error, Hashable, Sendable {
    /// The key is not a CBOR map.
    case notAMap
    /// A label the key type requires is absent or has the wrong type.
    case missingOrInvalidLabel(Int)
    /// The key type, curve and algorithm are not one of the pairs supported: EC2 P-256 with ES256 or ESP256, OKP
    /// Ed25519 with EdDSA or Ed25519, RSA with RS256.
    case unsupportedKey(keyType: Int?, curve: Int?, algorithm: Int?)
    /// The coordinates do not name a point on P-256 (or an RSA key is malformed or shorter than 2048 bits).
    case pointNotOnCurve
}

/// A credential public key as COSE (RFC 9053) writes it, of the kinds WebAuthn relying parties and this
/// authenticator use:
/// - EC2 on P-256 for ES256 or ESP256: `{1: 2, 3: -7, -1: 1, -2: x, -3: y}`;
/// - OKP on Ed25519 for EdDSA or Ed25519: `{1: 1, 3: -8, -1: 6, -2: x}`;
/// - RSA for RS256: `{1: 3, 3: -257, -1: n, -2: e}` (verified only; this authenticator makes no RSA keys).
public struct COSEKey: Hashable, Sendable {
    /// The key itself.
    public enum Material: Hashable, Sendable {
        /// A P-256 point: the 32-byte big-endian x and y coordinates.
        case p256(x: [UInt8], y: [UInt8])
        /// An Ed25519 public key: 32 bytes.
        case ed25519(x: [UInt8])
        /// An RSA public key: modulus and exponent, big-endian.
        case rsa(n: [UInt8], e: [UInt8])
    }

    public var algorithm: COSEAlgorithm
    public var material: Material

    /// The algorithms a key here can carry and verify: ES256, ESP256, EdDSA, Ed25519, RS256.
    public static let algorithms: [COSEAlgorithm] = [.es256, .esp256, .eddsa, .ed25519, .rs256]

    public init(publicKey: P256.Signing.PublicKey, algorithm: COSEAlgorithm = .es256) {
        let raw = Array(publicKey.rawRepresentation)
        self.algorithm = algorithm
        material = .p256(x: Array(raw[0..<32]), y: Array(raw[32..<64]))
    }

    public init(publicKey: Curve25519.Signing.PublicKey, algorithm: COSEAlgorithm = .eddsa) {
        self.algorithm = algorithm
        material = .ed25519(x: Array(publicKey.rawRepresentation))
    }

    /// The algorithms a key of each kind may carry.
    static func fits(_ algorithm: COSEAlgorithm, keyType: Int, curve: Int?) -> Bool {
        switch (keyType, curve) {
        case (2, 1?): algorithm == .es256 || algorithm == .esp256
        case (1, 6?): algorithm == .eddsa || algorithm == .ed25519
        case (3, nil): algorithm == .rs256
        default: false
        }
    }

    public var coseRepresentation: CBORValue {
        switch material {
        case .p256(let x, let y): [1: 2, 3: .int(algorithm.rawValue), -1: 1, -2: .bytes(x), -3: .bytes(y)]
        case .ed25519(let x): [1: 1, 3: .int(algorithm.rawValue), -1: 6, -2: .bytes(x)]
        case .rsa(let n, let e): [1: 3, 3: .int(algorithm.rawValue), -1: .bytes(n), -2: .bytes(e)]
        }
    }

    public init(coseRepresentation: CBORValue) throws(COSEError) {
        guard let map = coseRepresentation.mapValue else { throw .notAMap }
        let keyType = map[1]?.intValue
        let algorithm = map[3]?.intValue
        // For RSA, label -1 is the modulus, not a curve.
        let curve = keyType == 3 ? nil : map[-1]?.intValue
        guard let keyType, let algorithm, Self.fits(COSEAlgorithm(rawValue: algorithm), keyType: keyType, curve: curve)
        else { throw .unsupportedKey(keyType: keyType, curve: curve, algorithm: algorithm) }
        self.algorithm = COSEAlgorithm(rawValue: algorithm)
        switch keyType {
        case 2:
            guard let x = map[-2]?.bytesValue, x.count == 32 else { throw .missingOrInvalidLabel(-2) }
            guard let y = map[-3]?.bytesValue, y.count == 32 else { throw .missingOrInvalidLabel(-3) }
            material = .p256(x: x, y: y)
        case 1:
            guard let x = map[-2]?.bytesValue, x.count == 32 else { throw .missingOrInvalidLabel(-2) }
            material = .ed25519(x: x)
        default:
            guard let n = map[-1]?.bytesValue, !n.isEmpty else { throw .missingOrInvalidLabel(-1) }
            guard let e = map[-2]?.bytesValue, !e.isEmpty, e.count <= 8 else { throw .missingOrInvalidLabel(-2) }
            material = .rsa(n: n, e: e)
        }
        try checkKey()
    }

    /// Checks that the key is usable: a point on P-256, an Ed25519 key swift-crypto takes, an RSA key of at least
    /// 2048 bits.
    private func checkKey() throws(COSEError) {
        switch material {
        case .p256: _ = try signingKey()
        case .ed25519(let x):
            guard (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil else { throw .pointNotOnCurve }
        case .rsa:
            guard rsaKey() != nil else { throw .pointNotOnCurve }
        }
    }

    /// A P-256 key as swift-crypto's type, checking that the point is on the curve; an error for other kinds.
    public func signingKey() throws(COSEError) -> P256.Signing.PublicKey {
        guard case .p256(let x, let y) = material else {
            throw .unsupportedKey(keyType: nil, curve: nil, algorithm: algorithm.rawValue)
        }
        do {
            return try P256.Signing.PublicKey(rawRepresentation: x + y)
        } catch {
            throw .pointNotOnCurve
        }
    }

    /// The RSA key; nil when swift-crypto does not take it (under 2048 bits included).
    private func rsaKey() -> _RSA.Signing.PublicKey? {
        guard case .rsa(let n, let e) = material else { return nil }
        return try? _RSA.Signing.PublicKey(n: n, e: e)
    }

    /// Whether `signature` is this key's over `data`, by its algorithm: ECDSA in DER (ES256, ESP256), the 64 raw
    /// bytes of EdDSA, RSASSA-PKCS1-v1_5 with SHA-256 (RS256).
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch material {
        case .p256:
            guard let key = try? signingKey(),
                let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature)
            else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let x):
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else { return false }
            return key.isValidSignature(signature, for: data)
        case .rsa:
            guard let key = rsaKey() else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: data,
                padding: .insecurePKCS1v1_5)
        }
    }

    /// The key as a DER SubjectPublicKeyInfo, as WebAuthn's `getPublicKey()` returns it.
    public var subjectPublicKeyInfo: [UInt8]? {
        switch material {
        case .p256: (try? signingKey()).map { Array($0.derRepresentation) }
        case .ed25519(let x): Self.ed25519InfoPrefix + x
        case .rsa: rsaKey().map { Array($0.derRepresentation) }
        }
    }

    /// The DER of an Ed25519 SubjectPublicKeyInfo before the 32 key bytes (RFC 8410: id-Ed25519 1.3.101.112).
    static let ed25519InfoPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
}
