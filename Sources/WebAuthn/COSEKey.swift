import CBOR
import Crypto

/// A COSE algorithm identifier (IANA "COSE Algorithms"). Unknown values survive as data.
public struct COSEAlgorithm: RawRepresentable, Hashable, Sendable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA with SHA-256 on P-256: the only algorithm this authenticator makes keys for.
    public static let es256 = COSEAlgorithm(rawValue: -7)
}

/// Why a COSE_Key was refused.
public enum COSEError: Error, Hashable, Sendable {
    /// The key is not a CBOR map.
    case notAMap
    /// A label the key type requires is absent or has the wrong type.
    case missingOrInvalidLabel(Int)
    /// The key type, curve or algorithm is not EC2 / P-256 / ES256.
    case unsupportedKey(keyType: Int?, curve: Int?, algorithm: Int?)
    /// The coordinates do not name a point on P-256.
    case pointNotOnCurve
}

/// An EC2 public key on P-256 for ES256, as COSE (RFC 9053) writes it:
/// `{1: 2, 3: -7, -1: 1, -2: x, -3: y}`.
public struct COSEKey: Hashable, Sendable {
    public var algorithm: COSEAlgorithm
    /// The 32-byte big-endian x coordinate.
    public var x: [UInt8]
    /// The 32-byte big-endian y coordinate.
    public var y: [UInt8]

    public init(publicKey: P256.Signing.PublicKey) {
        let raw = Array(publicKey.rawRepresentation)
        algorithm = .es256
        x = Array(raw[0..<32])
        y = Array(raw[32..<64])
    }

    public var coseRepresentation: CBORValue {
        [1: 2, 3: .int(algorithm.rawValue), -1: 1, -2: .bytes(x), -3: .bytes(y)]
    }

    public init(coseRepresentation: CBORValue) throws(COSEError) {
        guard let map = coseRepresentation.mapValue else { throw .notAMap }
        let keyType = map[1]?.intValue
        let algorithm = map[3]?.intValue
        let curve = map[-1]?.intValue
        guard keyType == 2, algorithm == COSEAlgorithm.es256.rawValue, curve == 1 else {
            throw .unsupportedKey(keyType: keyType, curve: curve, algorithm: algorithm)
        }
        guard let x = map[-2]?.bytesValue, x.count == 32 else { throw .missingOrInvalidLabel(-2) }
        guard let y = map[-3]?.bytesValue, y.count == 32 else { throw .missingOrInvalidLabel(-3) }
        self.algorithm = .es256
        self.x = x
        self.y = y
        _ = try signingKey()
    }

    /// The key as swift-crypto's type, checking that the point is on the curve.
    public func signingKey() throws(COSEError) -> P256.Signing.PublicKey {
        do {
            return try P256.Signing.PublicKey(rawRepresentation: x + y)
        } catch {
            throw .pointNotOnCurve
        }
    }
}
