import CBOR
import Crypto

/// The request-type hint of a hybrid QR code (key 5). Unknown values survive as data.
///
/// Chromium writes `"ga"`, `"mc"` and, for digital credentials, `"dcp"` and `"dci"`; when parsing it treats any
/// other value as `"ga"` (`RequestTypeFromString` in `device/fido/cable/v2_handshake.cc`).
public struct HybridRequestType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value as the wire carries it.
    public var rawValue: String
    /// Wraps any value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// WebAuthn `get()`: CTAP getAssertion.
    public static let getAssertion = HybridRequestType(rawValue: "ga")
    /// WebAuthn `create()`: CTAP makeCredential.
    public static let makeCredential = HybridRequestType(rawValue: "mc")
    /// A digital-credential presentation request.
    public static let digitalCredentialPresentation = HybridRequestType(rawValue: "dcp")
    /// A digital-credential issuance request.
    public static let digitalCredentialIssuance = HybridRequestType(rawValue: "dci")

    /// The request type Chromium acts on: this one when it knows it, `.getAssertion` otherwise.
    public var effective: HybridRequestType {
        switch self {
        case .makeCredential, .digitalCredentialPresentation, .digitalCredentialIssuance: self
        default: .getAssertion
        }
    }

    /// A one-line explanation for logs and error messages.
    public var description: String { rawValue }
}

/// Why a hybrid QR code URL was refused.
public enum QRCodeError: Error, Hashable, Sendable {
    /// The text does not start with `FIDO:/` (compared without regard to case).
    case missingPrefix
    /// The text after the prefix is not a valid digit encoding.
    case invalidDigits(DigitEncodingError)
    /// The decoded bytes are not one canonical CBOR item.
    case invalidCBOR(CBORError)
    /// The CBOR item is not a map.
    case notAMap
    /// A required key (0 or 1) is absent.
    case missingKey(Int)
    /// A key holds the wrong type: 0 and 1 need byte strings, 2 an integer (that fits 64 bits), 4 a bool, 5 text.
    case wrongType(key: Int)
    /// The public key (key 0) is not 33 bytes (the count given).
    case publicKeyWrongLength(Int)
    /// The public key is not a compressed point on P-256.
    case publicKeyNotOnCurve
    /// The secret (key 1) is not 16 bytes (the count given).
    case secretWrongLength(Int)
}

extension QRCodeError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .missingPrefix: "not a hybrid QR code: it must start with FIDO:/"
        case .invalidDigits(let error): "QR code digits are invalid: \(error)"
        case .invalidCBOR(let error): "QR code payload is not canonical CBOR: \(error)"
        case .notAMap: "QR code payload is not a CBOR map"
        case .missingKey(let key): "QR code payload has no key \(key)"
        case .wrongType(let key): "QR code payload key \(key) has the wrong type"
        case .publicKeyWrongLength(let count): "QR code public key has \(count) bytes (33 expected)"
        case .publicKeyNotOnCurve: "QR code public key is not a point on P-256"
        case .secretWrongLength(let count): "QR code secret has \(count) bytes (16 expected)"
        }
    }
}

/// What a hybrid QR code carries: `FIDO:/` followed by the digit encoding of a CBOR map.
///
/// | key | type | meaning |
/// |---|---|---|
/// | 0 | bytes(33) | the client's P-256 public key, compressed (`02`/`03` ‖ X) |
/// | 1 | bytes(16) | the QR secret |
/// | 2 | int | how many assigned tunnel server domains the client knows (optional; absent means 0) |
/// | 3 | uint | the client's clock, UNIX seconds (optional; Chromium ignores it) |
/// | 4 | bool | the client can store linking information ("state-assisted") |
/// | 5 | text | the request type hint |
///
/// Parsing follows Chromium `qr::Parse` (`device/fido/cable/v2_handshake.cc`): keys 0 and 1 must be byte strings,
/// and keys 2, 4 and 5, when present, an integer, a bool and text; unknown keys are ignored, so is key 3's value
/// unless it is an unsigned integer. Writing always includes key 4 (false when unset) and never key 6, whose
/// meaning drafts disagree on and which pre-2.3 Google Play services rejects in one of its forms.
public struct QRCodePayload: Sendable {
    /// The URL scheme and the slash before the digits (`kPrefix`).
    public static let prefix = "FIDO:/"
    /// The secret's length.
    public static let secretByteCount = 16

    /// The client's key: the Noise KNpsk0 pre-message key. The client keeps the private half.
    public let publicKey: P256.KeyAgreement.PublicKey
    /// The public key as it appears in the QR code: 33 bytes, compressed.
    public let compressedPublicKey: [UInt8]
    /// 16 random bytes from which the advert keys, tunnel ID and PSK derive.
    public let secret: [UInt8]
    /// Key 2: how many assigned domains (0, 1, …) the client can decode; `nil` when absent.
    public var knownDomainCount: Int?
    /// Key 3: the client's clock in UNIX seconds; `nil` when absent or not an unsigned integer.
    public var timestamp: UInt64?
    /// Key 4: whether the client can store linking information; `nil` when absent (a CTAP 2.0-era client).
    public var stateAssisted: Bool?
    /// Key 5: the request-type hint; `nil` when absent, which Chromium reads as `.getAssertion`.
    public var requestType: HybridRequestType?

    /// Builds a payload; the secret must be 16 bytes.
    public init(
        publicKey: P256.KeyAgreement.PublicKey,
        secret: [UInt8],
        knownDomainCount: Int? = nil,
        timestamp: UInt64? = nil,
        stateAssisted: Bool? = nil,
        requestType: HybridRequestType? = nil
    ) throws(QRCodeError) {
        guard secret.count == Self.secretByteCount else { throw .secretWrongLength(secret.count) }
        self.publicKey = publicKey
        self.compressedPublicKey = Array(publicKey.compressedRepresentation)
        self.secret = secret
        self.knownDomainCount = knownDomainCount
        self.timestamp = timestamp
        self.stateAssisted = stateAssisted
        self.requestType = requestType
    }

    /// The payload a client shows for a fresh key pair, as current Chromium writes it (`qr::Encode`): both
    /// assigned domains known, the time, linking offered only when asked for (Chromium offers it for no WebAuthn
    /// request), and the request type.
    ///
    /// The caller generates `privateKey` and the 16 random bytes of `secret` and keeps both for the handshake.
    public init(
        clientKey privateKey: P256.KeyAgreement.PrivateKey,
        secret: [UInt8],
        requestType: HybridRequestType,
        timestamp: UInt64,
        offersLinking: Bool = false
    ) throws(QRCodeError) {
        try self.init(
            publicKey: privateKey.publicKey,
            secret: secret,
            knownDomainCount: TunnelDomain.assignedDomainCount,
            timestamp: timestamp,
            stateAssisted: offersLinking,
            requestType: requestType
        )
    }

    /// The public key uncompressed (`04 ‖ X ‖ Y`, 65 bytes), as Noise mixes it into the handshake hash.
    public var uncompressedPublicKey: [UInt8] { Array(publicKey.x963Representation) }

    /// Whether the client said it can decode `domain`: hashed domains always, assigned ones when their ID is below
    /// `knownDomainCount` (an absent key 2 counts as 0). An authenticator falls back to a hashed domain otherwise.
    public func clientKnows(_ domain: TunnelDomain) -> Bool {
        domain.isHashed || Int(domain.id) < (knownDomainCount ?? 0)
    }

    /// The request type Chromium acts on: the hint when known, `.getAssertion` when absent or unknown.
    public var effectiveRequestType: HybridRequestType { requestType?.effective ?? .getAssertion }

    /// Parses a `FIDO:/…` URL (the prefix in any case).
    public init(url: some StringProtocol) throws(QRCodeError) {
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
    public init(cborBytes: [UInt8]) throws(QRCodeError) {
        let value: CBORValue
        do {
            value = try CBORValue(decoding: cborBytes)
        } catch {
            throw .invalidCBOR(error)
        }
        guard let map = value.mapValue else { throw .notAMap }
        guard let keyValue = map[0] else { throw .missingKey(0) }
        guard let compressed = keyValue.bytesValue else { throw .wrongType(key: 0) }
        guard let secretValue = map[1] else { throw .missingKey(1) }
        guard let secret = secretValue.bytesValue else { throw .wrongType(key: 1) }
        guard secret.count == Self.secretByteCount else { throw .secretWrongLength(secret.count) }
        guard compressed.count == 33 else { throw .publicKeyWrongLength(compressed.count) }
        guard let publicKey = try? P256.KeyAgreement.PublicKey(compressedRepresentation: compressed) else {
            throw .publicKeyNotOnCurve
        }
        self.publicKey = publicKey
        // A valid point has one compressed form, so these are the bytes the QR code held.
        self.compressedPublicKey = compressed
        self.secret = secret
        if let count = map[2] {
            // Chromium's CBOR reader refuses integers outside Int64; `intValue` does the same here.
            guard let count = count.intValue else { throw .wrongType(key: 2) }
            knownDomainCount = count
        }
        if case .unsigned(let seconds) = map[3] { timestamp = seconds }
        if let flag = map[4] {
            guard let flag = flag.boolValue else { throw .wrongType(key: 4) }
            stateAssisted = flag
        }
        if let type = map[5] {
            guard let type = type.textValue else { throw .wrongType(key: 5) }
            requestType = HybridRequestType(rawValue: type)
        }
    }

    /// The canonical CBOR map: keys 0, 1 and 4 always, keys 2, 3 and 5 when set.
    public var cborBytes: [UInt8] {
        var map: [CBORValue: CBORValue] = [
            0: .bytes(compressedPublicKey),
            1: .bytes(secret),
            4: .bool(stateAssisted ?? false),
        ]
        if let knownDomainCount { map[2] = .int(knownDomainCount) }
        if let timestamp { map[3] = .unsigned(timestamp) }
        if let requestType { map[5] = .text(requestType.rawValue) }
        return CBORValue.map(map).encoded()
    }

    /// The `FIDO:/…` URL to put in the QR code.
    public var url: String { Self.prefix + DigitEncoding.encode(cborBytes) }
}

extension QRCodePayload: Hashable {
    /// Equal when every field is, comparing keys by their compressed bytes.
    public static func == (lhs: QRCodePayload, rhs: QRCodePayload) -> Bool {
        lhs.compressedPublicKey == rhs.compressedPublicKey && lhs.secret == rhs.secret
            && lhs.knownDomainCount == rhs.knownDomainCount && lhs.timestamp == rhs.timestamp
            && lhs.stateAssisted == rhs.stateAssisted && lhs.requestType == rhs.requestType
    }

    /// Hashes the fields that `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(compressedPublicKey)
        hasher.combine(secret)
        hasher.combine(knownDomainCount)
        hasher.combine(timestamp)
        hasher.combine(stateAssisted)
        hasher.combine(requestType)
    }
}
