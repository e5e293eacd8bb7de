import Crypto
import _CryptoExtras

/// Why a BLE advert (or its plaintext or key) was refused.
public enum AdvertError: Error, Hashable, Sendable {
    /// The advert is not 20 bytes, or the plaintext not 16 (the count given).
    case wrongLength(Int)
    /// The EID key is not 64 bytes (the count given).
    case invalidKeyLength(Int)
    /// The nonce is not 10 bytes (the count given).
    case invalidNonceLength(Int)
    /// The 4-byte tag does not match under any key tried: the advert is not for us.
    case tagMismatch
    /// The first plaintext byte, reserved for features a QR code must announce, is not zero.
    case reservedByteNotZero(UInt8)
    /// The plaintext names a reserved tunnel server domain (2–255).
    case unassignedDomain(UInt16)
}

extension AdvertError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .wrongLength(let count): "advert has \(count) bytes (20 expected, or 16 for a plaintext)"
        case .invalidKeyLength(let count): "EID key has \(count) bytes (64 expected)"
        case .invalidNonceLength(let count): "advert nonce has \(count) bytes (10 expected)"
        case .tagMismatch: "advert tag does not match: not encrypted with this key"
        case .reservedByteNotZero(let byte): "advert reserved byte is \(byte), not 0"
        case .unassignedDomain(let id): "advert names reserved tunnel server domain \(id)"
        }
    }
}

/// The 16-byte plaintext of a caBLE v2 BLE advert ("EID"): `0x00 ‖ nonce[10] ‖ routingID[3] ‖ domain (UInt16 LE)`.
///
/// Chromium `device/fido/cable/v2_handshake.cc` (`eid::FromComponents`, `eid::ToComponents`, `eid::Decrypt`).
/// The whole plaintext salts the Noise PSK (`KeyDerivation.psk(secret:advert:)`).
public struct AdvertPlaintext: Hashable, Sendable {
    /// The plaintext's length: one AES block.
    public static let byteCount = 16
    /// The nonce's length (`kNonceSize`).
    public static let nonceByteCount = 10

    /// Ten random bytes, fresh for every advert.
    public let nonce: [UInt8]
    /// The routing ID the authenticator's tunnel server assigned.
    public var routingID: RoutingID
    /// The tunnel server the authenticator connected to.
    public var domain: TunnelDomain

    /// Builds a plaintext; the nonce must be 10 bytes.
    public init(nonce: [UInt8], routingID: RoutingID, domain: TunnelDomain) throws(AdvertError) {
        guard nonce.count == Self.nonceByteCount else { throw .invalidNonceLength(nonce.count) }
        self.nonce = nonce
        self.routingID = routingID
        self.domain = domain
    }

    /// Parses 16 bytes, applying Chromium's checks: the reserved byte must be zero and the domain ID must be
    /// 0, 1 or 256 and up (`ToKnownDomainID`: `id < kAssignedDomains.size() || id >= 256`).
    public init(bytes: [UInt8]) throws(AdvertError) {
        guard bytes.count == Self.byteCount else { throw .wrongLength(bytes.count) }
        guard bytes[0] == 0 else { throw .reservedByteNotZero(bytes[0]) }
        let domainID = UInt16(bytes[14]) | UInt16(bytes[15]) << 8
        guard let domain = try? TunnelDomain(id: domainID) else { throw .unassignedDomain(domainID) }
        nonce = Array(bytes[1..<11])
        routingID = RoutingID(validBytes: Array(bytes[11..<14]))
        self.domain = domain
    }

    /// The 16 bytes.
    public var bytes: [UInt8] {
        [0] + nonce + routingID.bytes + [
            UInt8(truncatingIfNeeded: domain.id), UInt8(truncatingIfNeeded: domain.id >> 8),
        ]
    }
}

/// The keys that encrypt and authenticate BLE adverts: 64 bytes from `Derive(secret, nonce, kEIDKey, 64)`,
/// the AES-256 key first and the HMAC-SHA256 key second.
///
/// An advert is `AES-256(key[0..<32], plaintext) ‖ HMAC-SHA256(key[32..<64], ciphertext)[0..<4]`, 20 bytes
/// (Chromium `eid::Encrypt`, `eid::Decrypt`). The HMAC key is prepared once here, so trying an advert that is
/// not ours costs one HMAC over 16 bytes and a comparison.
public struct EIDKey: Sendable {
    /// The key's length: two 32-byte keys.
    public static let byteCount = 64
    /// An encrypted advert's length: a 16-byte block and a 4-byte tag (`kAdvertSize`).
    public static let advertByteCount = 20

    /// The 64 key bytes.
    public let rawRepresentation: [UInt8]
    private let encryptionKey: SymmetricKey
    /// HMAC keyed with the second half and fed nothing yet; copied for each advert.
    private let authenticator: HMAC<SHA256>

    /// Takes exactly 64 bytes.
    public init(rawRepresentation: [UInt8]) throws(AdvertError) {
        guard rawRepresentation.count == Self.byteCount else { throw .invalidKeyLength(rawRepresentation.count) }
        self.init(validBytes: rawRepresentation)
    }

    /// For derivations that produced exactly 64 bytes.
    init(validBytes: [UInt8]) {
        rawRepresentation = validBytes
        encryptionKey = SymmetricKey(data: validBytes[0..<32])
        authenticator = HMAC<SHA256>(key: SymmetricKey(data: validBytes[32..<64]))
    }

    /// The 20-byte advert for `plaintext`.
    public func encrypt(_ plaintext: AdvertPlaintext) -> [UInt8] {
        seal(plaintext.bytes)
    }

    /// Encrypts and tags any one block: `encrypt` passes only valid plaintexts; tests make invalid ones too.
    func seal(_ block: [UInt8]) -> [UInt8] {
        var advert = block
        do {
            try AES.permute(&advert, key: encryptionKey)
        } catch {
            // Only thrown for a block that is not 16 bytes or a key that is not 128, 192 or 256 bits.
            preconditionFailure("AES.permute refused a 16-byte block and a 256-bit key: \(error)")
        }
        var mac = authenticator
        mac.update(data: advert)
        mac.finalize().withUnsafeBytes { advert.append(contentsOf: $0.prefix(4)) }
        return advert
    }

    /// Checks the tag of a 20-byte advert in constant time, decrypts it and parses the plaintext.
    public func decrypt(_ advert: [UInt8]) throws(AdvertError) -> AdvertPlaintext {
        guard advert.count == Self.advertByteCount else { throw .wrongLength(advert.count) }
        guard tagMatches(advert) else { throw .tagMismatch }
        return try AdvertPlaintext(bytes: decryptBlock(advert))
    }

    /// Trial-decrypts a 20-byte advert with each candidate key in turn, as Chromium's discovery tries its pending
    /// linked tunnels, then the QR key, then extension keys; returns the first key that accepts it.
    ///
    /// When no key accepts it, the error is the first rejection of an advert whose tag matched (such as
    /// `.unassignedDomain`), or `.tagMismatch` when no tag matched.
    public static func decrypt(
        _ advert: [UInt8],
        candidates: [EIDKey]
    ) throws(AdvertError) -> (keyIndex: Int, plaintext: AdvertPlaintext) {
        guard advert.count == advertByteCount else { throw .wrongLength(advert.count) }
        var firstRejection: AdvertError?
        for (index, key) in candidates.enumerated() where key.tagMatches(advert) {
            do {
                return (index, try AdvertPlaintext(bytes: key.decryptBlock(advert)))
            } catch {
                firstRejection = firstRejection ?? error
            }
        }
        throw firstRejection ?? .tagMismatch
    }

    /// Compares all four tag bytes without an early exit (Chromium uses `CRYPTO_memcmp`).
    private func tagMatches(_ advert: [UInt8]) -> Bool {
        advert.withUnsafeBytes { bytes in
            var mac = authenticator
            mac.update(data: UnsafeRawBufferPointer(rebasing: bytes[0..<16]))
            return mac.finalize().withUnsafeBytes { computed in
                var difference: UInt8 = 0
                for index in 0..<4 { difference |= computed[index] ^ bytes[16 + index] }
                return difference == 0
            }
        }
    }

    private func decryptBlock(_ advert: [UInt8]) -> [UInt8] {
        var block = Array(advert[0..<16])
        do {
            try AES.inversePermute(&block, key: encryptionKey)
        } catch {
            preconditionFailure("AES.inversePermute refused a 16-byte block and a 256-bit key: \(error)")
        }
        return block
    }
}
