import CBOR

// What travels inside the Crypter after the handshake (write-up §6; Chromium @ccfdb09e fido_tunnel_device.cc
// FidoTunnelDevice::OnTunnelData (state kWaitingForPostHandshakeMessage), EstablishedConnection::OnTunnelData and
// ProcessUpdate on the client; v2_authenticator.cc TunnelTransport::OnTunnelData on the phone; v2_handshake.cc
// EncodePaddedCBORMap / DecodePaddedCBORMap).

/// Why the post-handshake message or an update message was refused.
public enum PostHandshakeError: Error, Hashable, Sendable {
    /// The plaintext is neither one CBOR item (revision 1) nor a padded CBOR map (revision 0).
    case undecodable
    /// The message decodes, but not to a CBOR map.
    case notAMap
    /// Key 3 (features) is present but not an array.
    case invalidFeatures
    /// CTAP is supported (key 3 absent or listing "ctap") but key 1 (getInfo) is absent or not a byte string.
    case missingGetInfo
    /// Key 1 (getInfo) is present although key 3 does not list "ctap".
    case unexpectedGetInfo
    /// The linking information (key 2 of the post-handshake message, key 1 of an update) is malformed.
    case invalidLinking(LinkingError)
}

extension PostHandshakeError: CustomStringConvertible {
    /// One line for logs; it never contains key material.
    public var description: String {
        switch self {
        case .undecodable: "caBLE post-handshake message is not CBOR"
        case .notAMap: "caBLE post-handshake message is not a CBOR map"
        case .invalidFeatures: "caBLE post-handshake features are not an array"
        case .missingGetInfo: "caBLE post-handshake message lacks the getInfo response"
        case .unexpectedGetInfo: "caBLE post-handshake message has getInfo but does not support CTAP"
        case .invalidLinking(let error): "invalid linking information: \(error)"
        }
    }
}

/// The tunnel protocol revision, detected from the post-handshake message.
public enum ProtocolRevision: Int, Hashable, Sendable {
    /// caBLE 2.0: the post-handshake message is padded (``PaddedCBOR``) and every later message is raw CTAP.
    case zero = 0
    /// caBLE 2.1: an unpadded post-handshake message, then `type ‖ payload` messages.
    case one = 1
}

/// A feature named in key 3 of the post-handshake message. Unknown names survive as data.
public struct HybridFeature: RawRepresentable, Hashable, Sendable {
    /// The name on the wire.
    public var rawValue: String
    /// Creates a feature from its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// CTAP2 requests and responses.
    public static let ctap = HybridFeature(rawValue: "ctap")
    /// Digital-credential (JSON) requests.
    public static let digitalCredentials = HybridFeature(rawValue: "dc")
}

/// The authenticator's first encrypted message: a CBOR map with no type byte.
///
/// | key | type | content |
/// |---|---|---|
/// | 1 | bstr | the getInfo response, CBOR without a status byte |
/// | 2 | map | linking information (older phones) |
/// | 3 | array of tstr | features; absent means CTAP only |
public struct PostHandshakeMessage: Hashable, Sendable {
    /// Key 1: the authenticator's getInfo response (no status byte). Chromium answers later getInfo commands with it.
    public var getInfo: [UInt8]?
    /// Key 2: linking information, structurally checked; the client still verifies its signature.
    public var linking: LinkingInfo?
    /// Key 3: the features; nil when the key is absent.
    public var features: [HybridFeature]?

    /// Creates a message; a revision-1 authenticator should list its features.
    public init(getInfo: [UInt8]?, linking: LinkingInfo? = nil, features: [HybridFeature]? = nil) {
        self.getInfo = getInfo
        self.linking = linking
        self.features = features
    }

    /// Whether the authenticator accepts CTAP: key 3 absent, or listing "ctap".
    public var supportsCTAP: Bool { features?.contains(.ctap) ?? true }

    /// The CBOR map.
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let getInfo { map[1] = .bytes(getInfo) }
        if let linking { map[2] = linking.cborValue }
        if let features { map[3] = .array(features.map { .text($0.rawValue) }) }
        return .map(map)
    }

    /// The plaintext to encrypt: the map alone in revision 1, the map padded by ``PaddedCBOR`` in revision 0.
    public func plaintext(revision: ProtocolRevision) -> [UInt8] {
        switch revision {
        case .one: cborValue.encoded()
        case .zero: PaddedCBOR.encode(cborValue)
        }
    }

    /// Parses the first decrypted message from the authenticator and detects the revision, as
    /// fido_tunnel_device.cc does: one CBOR item means revision 1; otherwise the message must be a padded map
    /// (revision 0). Then the fields: key 3 must be an array if present (entries that are not text are skipped,
    /// as in Chromium); key 1 must be a byte string exactly when CTAP is supported; key 2 must be linking
    /// information.
    public static func parse(
        _ plaintext: [UInt8]
    ) throws(PostHandshakeError) -> (message: PostHandshakeMessage, revision: ProtocolRevision) {
        let revision: ProtocolRevision
        let value: CBORValue
        if let single = try? CBORValue(decoding: plaintext) {
            (value, revision) = (single, .one)
        } else {
            (value, revision) = (try PaddedCBOR.decode(plaintext), .zero)
        }
        guard let map = value.mapValue else { throw .notAMap }

        var features: [HybridFeature]?
        if let featureValue = map[3] {
            guard let array = featureValue.arrayValue else { throw .invalidFeatures }
            features = array.compactMap { $0.textValue.map(HybridFeature.init(rawValue:)) }
        }
        var message = PostHandshakeMessage(getInfo: nil, features: features)
        if message.supportsCTAP {
            guard let getInfo = map[1]?.bytesValue else { throw .missingGetInfo }
            message.getInfo = getInfo
        } else if map[1] != nil {
            throw .unexpectedGetInfo
        }
        if let linkingValue = map[2] {
            do throws(LinkingError) {
                message.linking = try LinkingInfo(cbor: linkingValue)
            } catch {
                throw .invalidLinking(error)
            }
        }
        return (message, revision)
    }
}

/// Chromium's PaddedCBOR (v2_handshake.cc `EncodePaddedCBORMap` / `DecodePaddedCBORMap`), used only by the
/// revision-0 post-handshake message.
public enum PaddedCBOR {
    /// The padded length is a multiple of this (v2_constants.h `kPostHandshakeMsgPaddingGranularity`).
    public static let granularity = 512

    /// The canonical CBOR, zero bytes, and the number of zero bytes as a `UInt16` little-endian, to a multiple
    /// of 512 bytes.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var bytes = value.encoded()
        let paddedCount = (bytes.count + 2 + granularity - 1) / granularity * granularity
        let zeros = paddedCount - bytes.count - 2
        bytes.append(contentsOf: repeatElement(0, count: zeros))
        bytes.append(UInt8(truncatingIfNeeded: zeros))
        bytes.append(UInt8(truncatingIfNeeded: zeros >> 8))
        return bytes
    }

    /// Tries the current form (trailing `UInt16` little-endian padding length) and then the form Chromium wrote
    /// until M98 (trailing `UInt8`, granularity 256). Either way the rest must be exactly one CBOR map; neither the
    /// padding bytes nor the alignment are checked, as in Chromium.
    public static func decode(_ bytes: [UInt8]) throws(PostHandshakeError) -> CBORValue {
        if let value = decode16(bytes) ?? decode8(bytes) { return value }
        throw .undecodable
    }

    private static func decode16(_ bytes: [UInt8]) -> CBORValue? {
        guard bytes.count >= 2 else { return nil }
        let padding = Int(bytes[bytes.count - 2]) | Int(bytes[bytes.count - 1]) << 8
        guard padding + 2 <= bytes.count else { return nil }
        return map(bytes[..<(bytes.count - padding - 2)])
    }

    private static func decode8(_ bytes: [UInt8]) -> CBORValue? {
        guard let last = bytes.last, Int(last) + 1 <= bytes.count else { return nil }
        return map(bytes[..<(bytes.count - Int(last) - 1)])
    }

    private static func map(_ bytes: ArraySlice<UInt8>) -> CBORValue? {
        guard let value = try? CBORValue(decoding: bytes), value.mapValue != nil else { return nil }
        return value
    }
}

// MARK: - Messages after the post-handshake message

/// The type byte of a revision-1 message (Chromium fido_tunnel_device.h `MessageType`). Unknown values survive as
/// data when building, but ``TunnelFrame/init(plaintext:revision:)`` refuses them, as Chromium does.
public struct TunnelFrameType: RawRepresentable, Hashable, Sendable {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Creates a type from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Client to authenticator only, empty payload: the client is done. Chromium treats one from the
    /// authenticator as an error.
    public static let shutdown = TunnelFrameType(rawValue: 0)
    /// A CTAP command (command byte ‖ CBOR) or response (status byte ‖ CBOR).
    public static let ctap = TunnelFrameType(rawValue: 1)
    /// Authenticator to client: ``UpdateMessage``.
    public static let update = TunnelFrameType(rawValue: 2)
    /// Digital-credential request or response (JSON).
    public static let json = TunnelFrameType(rawValue: 3)
    /// The largest type Chromium accepts (`MessageType::kMaxValue`).
    public static let maximumKnown = json
}

/// Why a message after the post-handshake message was refused.
public enum FramingError: Error, Hashable, Sendable {
    /// A revision-1 message is empty: it lacks even the type byte.
    case empty
    /// The type byte is above 3 (Chromium `MessageType::kMaxValue`).
    case unknownType(UInt8)
    /// Revision 0 has no type byte, so it carries CTAP messages only.
    case typeNotInRevisionZero(TunnelFrameType)
}

extension FramingError: CustomStringConvertible {
    /// One line for logs; it never contains key material.
    public var description: String {
        switch self {
        case .empty: "caBLE message is empty"
        case .unknownType(let type): "caBLE message type \(type) is unknown"
        case .typeNotInRevisionZero(let type): "caBLE message type \(type.rawValue) does not exist in revision 0"
        }
    }
}

/// One decrypted message after the post-handshake message: `type ‖ payload` in revision 1, the bare CTAP
/// message in revision 0.
public struct TunnelFrame: Hashable, Sendable {
    /// What the payload is.
    public var type: TunnelFrameType
    /// The bytes after the type byte.
    public var payload: [UInt8]

    /// Creates a message.
    public init(type: TunnelFrameType, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// The client's last message (revision 1 only).
    public static let shutdown = TunnelFrame(type: .shutdown, payload: [])

    /// Parses a decrypted message. Revision 1 refuses an empty message and a type above 3 (Chromium
    /// EstablishedConnection::OnTunnelData); revision 0 reads every message, even an empty one, as CTAP.
    public init(plaintext: [UInt8], revision: ProtocolRevision) throws(FramingError) {
        switch revision {
        case .zero:
            self.init(type: .ctap, payload: plaintext)
        case .one:
            guard let first = plaintext.first else { throw .empty }
            guard first <= TunnelFrameType.maximumKnown.rawValue else { throw .unknownType(first) }
            self.init(type: TunnelFrameType(rawValue: first), payload: Array(plaintext.dropFirst()))
        }
    }

    /// The plaintext to encrypt.
    public func plaintext(revision: ProtocolRevision) throws(FramingError) -> [UInt8] {
        switch revision {
        case .zero:
            guard type == .ctap else { throw .typeNotInRevisionZero(type) }
            return payload
        case .one:
            return [type.rawValue] + payload
        }
    }
}

/// The payload of an update message (type 2): `{0: zero padding (bstr), 1: linking information}`.
///
/// The Chromium phone sends one right after the post-handshake message of every QR session, with linking
/// information only if it has any, sized so that the encrypted plaintext is 512 bytes (v2_authenticator.cc
/// `kPaddingTarget`).
public struct UpdateMessage: Hashable, Sendable {
    /// Key 1, when present.
    public var linking: LinkingInfo?

    /// Creates an update.
    public init(linking: LinkingInfo?) {
        self.linking = linking
    }

    /// Parses an update payload (after the type byte), as fido_tunnel_device.cc ProcessUpdate: one CBOR map; key 1,
    /// if present, must be linking information; other keys, the padding among them, are ignored.
    public init(payload: [UInt8]) throws(PostHandshakeError) {
        guard let value = try? CBORValue(decoding: payload) else { throw .undecodable }
        guard let map = value.mapValue else { throw .notAMap }
        if let linkingValue = map[1] {
            do throws(LinkingError) {
                linking = try LinkingInfo(cbor: linkingValue)
            } catch {
                throw .invalidLinking(error)
            }
        } else {
            linking = nil
        }
    }

    /// The payload as the Chromium phone writes it: the padding length starts at 512 − 16 − 1 − 3 = 492 (aiming 16
    /// bytes short of 512, less the key and a three-byte bstr header) and loses the length of `{1: linking}`, so
    /// that type byte, payload and the Crypter's own padding come to 512 bytes.
    public var payload: [UInt8] {
        var paddingLength = 512 - 16 - 1 - 3
        var map: [CBORValue: CBORValue] = [:]
        if let linking {
            let measured = CBORValue.map([1: linking.cborValue]).encoded().count
            if measured < paddingLength { paddingLength -= measured }
            map[1] = linking.cborValue
        }
        map[0] = .bytes([UInt8](repeating: 0, count: paddingLength))
        return CBORValue.map(map).encoded()
    }

    /// The update as a tunnel frame.
    public var frame: TunnelFrame { TunnelFrame(type: .update, payload: payload) }
}
