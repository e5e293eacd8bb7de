import Crypto

/// What a derived value is for: the HKDF `info`, written as a 4-byte little-endian integer.
///
/// Chromium `device/fido/cable/v2_handshake.h` (`DerivedValueType`). Unknown values survive as data.
public struct KeyPurpose: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value as the wire carries it.
    public var rawValue: UInt32
    /// Wraps any value, known or not.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The 64-byte key pair that encrypts and authenticates BLE adverts (`kEIDKey`).
    public static let eidKey = KeyPurpose(rawValue: 1)
    /// The 16-byte tunnel ID of a QR-initiated session (`kTunnelID`).
    public static let tunnelID = KeyPurpose(rawValue: 2)
    /// The 32-byte Noise pre-shared key (`kPSK`).
    public static let psk = KeyPurpose(rawValue: 3)
    /// A linked phone's per-pairing secret (`kPairedSecret`); internal to the authenticator.
    public static let pairedSecret = KeyPurpose(rawValue: 4)
    /// The seed of a phone's identity key (`kIdentityKeySeed`); internal to the authenticator.
    public static let identityKeySeed = KeyPurpose(rawValue: 5)
    /// The per-contact-ID secret a phone derives its paired secrets from (`kPerContactIDSecret`).
    public static let perContactIDSecret = KeyPurpose(rawValue: 6)

    /// The `info` bytes: the value as a little-endian UInt32.
    public var info: [UInt8] {
        [0, 8, 16, 24].map { UInt8(truncatingIfNeeded: rawValue >> $0) }
    }

    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .eidKey: "eidKey"
        case .tunnelID: "tunnelID"
        case .psk: "psk"
        case .pairedSecret: "pairedSecret"
        case .identityKeySeed: "identityKeySeed"
        case .perContactIDSecret: "perContactIDSecret"
        default: "purpose \(rawValue)"
        }
    }
}

/// Why a derivation was refused.
public enum KeyDerivationError: Error, Hashable, Sendable {
    /// HKDF-SHA256 yields at most 255 × 32 = 8160 bytes; the length asked for is outside 0…8160.
    case invalidLength(Int)
}

/// The one key derivation function of the hybrid protocol (Chromium `cablev2::Derive`):
/// `Derive(secret, salt, purpose, length) = HKDF-SHA256(ikm: secret, salt: salt, info: purpose as UInt32 LE)`.
///
/// An empty salt is RFC 5869's default (32 zero bytes): HMAC pads a short key with zeros, so the two agree.
/// HKDF output is prefix-consistent: a shorter length gives a prefix of a longer one.
public enum KeyDerivation {
    /// The largest output HKDF-SHA256 can give.
    public static let maximumLength = 255 * SHA256.byteCount

    /// `Derive(secret, salt, purpose, length)`.
    public static func derive(
        secret: [UInt8],
        salt: [UInt8] = [],
        purpose: KeyPurpose,
        length: Int
    ) throws(KeyDerivationError) -> [UInt8] {
        guard (0...maximumLength).contains(length) else { throw .invalidLength(length) }
        guard length > 0 else { return [] }
        return hkdf(secret: secret, salt: salt, purpose: purpose, length: length)
    }

    /// The QR flow's advert keys: `Derive(qr_secret, "", kEIDKey, 64)`.
    public static func eidKey(qrSecret: [UInt8]) -> EIDKey {
        EIDKey(validBytes: hkdf(secret: qrSecret, salt: [], purpose: .eidKey, length: EIDKey.byteCount))
    }

    /// The linked flow's advert keys: `Derive(link_secret, client_nonce, kEIDKey, 64)`, where the client nonce
    /// is the 16 random bytes the client sent in its `/cable/contact` request.
    public static func eidKey(linkSecret: [UInt8], clientNonce: [UInt8]) -> EIDKey {
        EIDKey(validBytes: hkdf(secret: linkSecret, salt: clientNonce, purpose: .eidKey, length: EIDKey.byteCount))
    }

    /// The QR flow's tunnel ID: `Derive(qr_secret, "", kTunnelID, 16)`.
    public static func tunnelID(qrSecret: [UInt8]) -> TunnelID {
        TunnelID(validBytes: hkdf(secret: qrSecret, salt: [], purpose: .tunnelID, length: TunnelID.byteCount))
    }

    /// The Noise pre-shared key: `Derive(secret, plaintext, kPSK, 32)`, salted with the whole decrypted 16-byte
    /// advert. `secret` is the QR secret in the QR flow and the link secret in the linked flow.
    public static func psk(secret: [UInt8], advert plaintext: AdvertPlaintext) -> [UInt8] {
        hkdf(secret: secret, salt: plaintext.bytes, purpose: .psk, length: 32)
    }

    private static func hkdf(secret: [UInt8], salt: [UInt8], purpose: KeyPurpose, length: Int) -> [UInt8] {
        HKDFSHA256.derive(inputKeyMaterial: secret, salt: salt, info: purpose.info, length: length)
    }
}

extension P256.KeyAgreement.PrivateKey {
    /// A fresh key for one hybrid session: 32 random bytes imported as the scalar, retried in the rare case they
    /// are not below the group order (probability about 2^-32). Uniform over valid scalars, and about ten times
    /// faster than the default initializer, which runs a pairwise consistency test and retries for compact form
    /// (`Tools/bench hybrid-core` measures both).
    public static func randomSessionKey() -> P256.KeyAgreement.PrivateKey {
        var generator = SystemRandomNumberGenerator()
        return randomSessionKey { count in (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
    }

    /// A session key from `randomBytes` (injected random sources, seeded in tests). A source that gives 64 invalid
    /// scalars in a row is broken; the default initializer's key is used then rather than looping for ever.
    public static func randomSessionKey(using randomBytes: (Int) -> [UInt8]) -> P256.KeyAgreement.PrivateKey {
        for _ in 0..<64 {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: randomBytes(32)) { return key }
        }
        return P256.KeyAgreement.PrivateKey()
    }
}
