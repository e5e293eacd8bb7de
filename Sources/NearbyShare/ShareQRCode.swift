import CBOR
import Crypto
import Hybrid

/// Why a share QR code was refused.
public enum ShareQRCodeError: Error, Hashable, Sendable {
    /// The text does not start with `PASSKEY-SHARE:/` (compared without regard to case); a `FIDO:/` URL lands here.
    case missingPrefix
    /// The text after the prefix is not a valid digit encoding.
    case invalidDigits(DigitEncodingError)
    /// The decoded bytes are not one canonical CBOR item.
    case invalidCBOR(CBORError)
    /// The CBOR item is not a map.
    case notAMap
    /// Key 0 is not the text `passkey-share`: another protocol's map, a hybrid one included.
    case wrongPurpose
    /// Key 1 names a version this program does not speak.
    case unsupportedVersion
    /// A required key is absent.
    case missingKey(Int)
    /// A key holds the wrong type: 0 text, 1 and 5 unsigned integers, 2, 3 and 4 byte strings.
    case wrongType(key: Int)
    /// A public key (key 2 or 4) is not 33 bytes.
    case keyWrongLength(key: Int, count: Int)
    /// A public key (key 2 or 4) is not a compressed point on P-256.
    case keyNotOnCurve(key: Int)
    /// The secret (key 3) is not 16 bytes (the count given).
    case secretWrongLength(Int)
    /// The two public keys are the same key: a key must not serve both the handshake and the sealing.
    case keysNotDistinct
}

extension ShareQRCodeError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .missingPrefix: "not a passkey share QR code: it must start with \(ShareQRCode.prefix)"
        case .invalidDigits(let error): "share QR code digits are invalid: \(error)"
        case .invalidCBOR(let error): "share QR code payload is not canonical CBOR: \(error)"
        case .notAMap: "share QR code payload is not a CBOR map"
        case .wrongPurpose: "the QR code payload is not for sharing a passkey"
        case .unsupportedVersion: "the share QR code is of a version this program does not speak"
        case .missingKey(let key): "share QR code payload has no key \(key)"
        case .wrongType(let key): "share QR code payload key \(key) has the wrong type"
        case .keyWrongLength(let key, let count): "share QR code key \(key) has \(count) bytes (33 expected)"
        case .keyNotOnCurve(let key): "share QR code key \(key) is not a point on P-256"
        case .secretWrongLength(let count): "share QR code secret has \(count) bytes (16 expected)"
        case .keysNotDistinct: "share QR code uses one key for both the handshake and the sealing"
        }
    }
}

/// What `passkey receive` shows: `PASSKEY-SHARE:/` followed by the digit encoding (the hybrid QR code's, so the
/// code stays in the QR numeric mode) of a CBOR map.
///
/// | key | type | meaning |
/// |---|---|---|
/// | 0 | text | `"passkey-share"`: the purpose marker |
/// | 1 | uint | protocol version, 1 |
/// | 2 | bytes(33) | the receiver's handshake key, compressed P-256: the Noise KNpsk0 pre-message key |
/// | 3 | bytes(16) | the QR secret: advert keys, tunnel ID and PSK derive from it as in hybrid |
/// | 4 | bytes(33) | the receiver's sealing key, compressed P-256: the HPKE recipient of the shared passkey |
/// | 5 | uint | the receiver's clock, UNIX seconds (optional, informative) |
///
/// A hybrid parser refuses this map (its keys 0 and 1 must be byte strings, Chromium `qr::Parse`), and this one
/// refuses a hybrid map (key 0 is not the purpose text), so neither protocol can be started from the other's
/// code, prefix or not. Unknown keys are ignored, for later versions. The two keys must differ.
public struct ShareQRCode: Sendable, Hashable {
    /// The URL scheme and the slash before the digits; all of it fits the QR alphanumeric mode.
    public static let prefix = "PASSKEY-SHARE:/"
    /// Key 0's value.
    public static let purpose = "passkey-share"
    /// The version this program speaks (key 1).
    public static let version: UInt64 = 1

    /// The receiver's Noise static key; the receiver keeps the private half for the handshake.
    public let handshakeKey: P256.KeyAgreement.PublicKey
    /// The 16 bytes every hybrid derivation starts from.
    public let secret: [UInt8]
    /// The key the shared passkey is sealed to (HPKE); the receiver keeps the private half.
    public let sealingKey: P256.KeyAgreement.PublicKey
    /// Key 5, when present.
    public var timestamp: UInt64?

    /// Builds a code; the secret must be 16 bytes and the keys distinct.
    public init(
        handshakeKey: P256.KeyAgreement.PublicKey, secret: [UInt8], sealingKey: P256.KeyAgreement.PublicKey,
        timestamp: UInt64? = nil
    ) throws(ShareQRCodeError) {
        guard secret.count == QRCodePayload.secretByteCount else { throw .secretWrongLength(secret.count) }
        guard handshakeKey.compressedRepresentation != sealingKey.compressedRepresentation else {
            throw .keysNotDistinct
        }
        self.handshakeKey = handshakeKey
        self.secret = secret
        self.sealingKey = sealingKey
        self.timestamp = timestamp
    }

    /// Parses a `PASSKEY-SHARE:/…` URL (the prefix in any case).
    public init(url: some StringProtocol) throws(ShareQRCodeError) {
        guard let digits = DigitEncoding.digits(of: url, afterPrefix: Self.prefix) else { throw .missingPrefix }
        let bytes: [UInt8]
        do {
            bytes = try DigitEncoding.decode(digits)
        } catch {
            throw .invalidDigits(error)
        }
        try self.init(cborBytes: bytes)
    }

    /// Parses the CBOR map the digits encode.
    public init(cborBytes: [UInt8]) throws(ShareQRCodeError) {
        let value: CBORValue
        do {
            value = try CBORValue(decoding: cborBytes)
        } catch {
            throw .invalidCBOR(error)
        }
        guard let map = value.mapValue else { throw .notAMap }
        guard map[0]?.textValue == Self.purpose else { throw .wrongPurpose }
        guard let version = map[1] else { throw .missingKey(1) }
        guard case .unsigned(let number) = version else { throw .wrongType(key: 1) }
        guard number == Self.version else { throw .unsupportedVersion }
        let handshakeKey = try Self.key(map, 2)
        guard let secretValue = map[3] else { throw .missingKey(3) }
        guard let secret = secretValue.bytesValue else { throw .wrongType(key: 3) }
        let sealingKey = try Self.key(map, 4)
        var timestamp: UInt64?
        if let seconds = map[5] {
            guard case .unsigned(let seconds) = seconds else { throw .wrongType(key: 5) }
            timestamp = seconds
        }
        try self.init(handshakeKey: handshakeKey, secret: secret, sealingKey: sealingKey, timestamp: timestamp)
    }

    /// The canonical CBOR map: keys 0 to 4, and 5 when set.
    public var cborBytes: [UInt8] {
        var map: [CBORValue: CBORValue] = [
            0: .text(Self.purpose), 1: .unsigned(Self.version),
            2: .bytes(Array(handshakeKey.compressedRepresentation)), 3: .bytes(secret),
            4: .bytes(Array(sealingKey.compressedRepresentation)),
        ]
        if let timestamp { map[5] = .unsigned(timestamp) }
        return CBORValue.map(map).encoded()
    }

    /// The `PASSKEY-SHARE:/…` URL to put in the QR code.
    public var url: String { Self.prefix + DigitEncoding.encode(cborBytes) }

    /// The hybrid QR payload the sender's phone role runs on: the handshake key and the secret, both assigned
    /// tunnel domains known (the receiver decodes any domain, as `HybridClientSession` does).
    public var hybridPayload: QRCodePayload {
        // Cannot throw: the secret's length was checked when this code was made.
        (try? QRCodePayload(
            publicKey: handshakeKey, secret: secret, knownDomainCount: TunnelDomain.assignedDomainCount,
            timestamp: timestamp))!
    }

    public static func == (lhs: ShareQRCode, rhs: ShareQRCode) -> Bool { lhs.cborBytes == rhs.cborBytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(cborBytes) }

    private static func key(_ map: [CBORValue: CBORValue], _ key: Int) throws(ShareQRCodeError)
        -> P256.KeyAgreement.PublicKey
    {
        guard let value = map[CBORValue.int(key)] else { throw .missingKey(key) }
        guard let bytes = value.bytesValue else { throw .wrongType(key: key) }
        guard bytes.count == 33 else { throw .keyWrongLength(key: key, count: bytes.count) }
        guard let publicKey = try? P256.KeyAgreement.PublicKey(compressedRepresentation: bytes) else {
            throw .keyNotOnCurve(key: key)
        }
        return publicKey
    }
}
