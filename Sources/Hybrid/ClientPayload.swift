import Basics
import CBOR

/// Why an `X-caBLE-Client-Payload` header was refused.
public enum ClientPayloadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The header value is longer than ``ClientPayload/maximumHeaderLength`` characters (the count given).
    case tooLong(Int)
    /// The header value is not an even number of hex digits.
    case notHex
    /// The bytes are not one canonical CBOR item.
    case invalidCBOR(CBORError)
    /// The CBOR item is not a map.
    case notAMap
    /// A required key (1, 2 or 3) is absent.
    case missingKey(Int)
    /// A key holds the wrong type or size: 1 must be 8 bytes, 2 16 bytes, 3 text.
    case invalidField(Int)

    public var description: String {
        switch self {
        case .tooLong(let count): "client payload header is \(count) characters, more than allowed"
        case .notHex: "client payload header is not hex"
        case .invalidCBOR(let error): "client payload is not canonical CBOR: \(error)"
        case .notAMap: "client payload is not a CBOR map"
        case .missingKey(let key): "client payload lacks key \(key)"
        case .invalidField(let key): "client payload key \(key) is malformed"
        }
    }
}

/// What a client sends with `/cable/contact/{CONTACT_ID}` so that the woken phone can find the link and derive the
/// advert key: the `X-caBLE-Client-Payload` header, hex of a CBOR map (Chromium fido_tunnel_device.cc, libwebauthn
/// `known_devices.rs`; write-up §4):
///
/// | key | type | content |
/// |---|---|---|
/// | 1 | bstr(8) | link ID (linking information key 2) |
/// | 2 | bstr(16) | client nonce: salts the advert key, `Derive(link secret, nonce, kEIDKey, 64)` |
/// | 3 | tstr | request type, `"ga"` or `"mc"` (unknown text is kept, and read as `"ga"`) |
///
/// The relay passes the bytes to the phone unchanged; it checks only that they parse, so that garbage never wakes a
/// phone. Parsing uses the strict canonical decoder; unknown keys are ignored.
public struct ClientPayload: Hashable, Sendable {
    /// The request header's name.
    public static let headerName = "X-caBLE-Client-Payload"
    /// The client nonce's length.
    public static let clientNonceLength = 16
    /// The longest header value read: far above the 38 bytes (76 hex digits) of a real payload.
    public static let maximumHeaderLength = 1024

    /// Key 1: the link ID the phone gave in its linking information.
    public var linkID: [UInt8]
    /// Key 2: 16 fresh random bytes per request.
    public var clientNonce: [UInt8]
    /// Key 3: what the client will ask for.
    public var requestType: HybridRequestType

    /// A payload; the link ID must be 8 bytes and the nonce 16.
    public init(linkID: [UInt8], clientNonce: [UInt8], requestType: HybridRequestType) throws(ClientPayloadError) {
        guard linkID.count == LinkingInfo.linkIDLength else { throw .invalidField(1) }
        guard clientNonce.count == Self.clientNonceLength else { throw .invalidField(2) }
        self.linkID = linkID
        self.clientNonce = clientNonce
        self.requestType = requestType
    }

    /// Parses the CBOR bytes (the header value decoded from hex, or what a listener receives in a wake).
    public init(cbor bytes: [UInt8]) throws(ClientPayloadError) {
        let value: CBORValue
        do throws(CBORError) {
            value = try CBORDecoder(maximumDepth: 4).decode(bytes)
        } catch {
            throw .invalidCBOR(error)
        }
        guard let map = value.mapValue else { throw .notAMap }
        guard let link = map[1] else { throw .missingKey(1) }
        guard let linkID = link.bytesValue else { throw .invalidField(1) }
        guard let nonce = map[2] else { throw .missingKey(2) }
        guard let clientNonce = nonce.bytesValue else { throw .invalidField(2) }
        guard let type = map[3] else { throw .missingKey(3) }
        guard let requestType = type.textValue else { throw .invalidField(3) }
        try self.init(linkID: linkID, clientNonce: clientNonce, requestType: HybridRequestType(rawValue: requestType))
    }

    /// Parses the header value: hex digits in either case, surrounding whitespace already stripped by HTTP.
    public init(headerValue: some StringProtocol) throws(ClientPayloadError) {
        let count = headerValue.utf8.count
        guard count <= Self.maximumHeaderLength else { throw .tooLong(count) }
        guard count % 2 == 0, let bytes = [UInt8](hex: headerValue) else { throw .notHex }
        try self.init(cbor: bytes)
    }

    /// The canonical CBOR map.
    public var cbor: [UInt8] {
        CBORValue.map([1: .bytes(linkID), 2: .bytes(clientNonce), 3: .text(requestType.rawValue)]).encoded()
    }

    /// The header value: upper-case hex of ``cbor``, as Chromium's `base::HexEncode` writes it.
    public var headerValue: String { cbor.upperHexString }
}

extension ClientPayload: CustomStringConvertible, CustomDebugStringConvertible {
    /// Names the link and the request; the nonce stays out of logs.
    public var description: String { "ClientPayload(linkID: \(linkID.hexString), requestType: \(requestType))" }
    public var debugDescription: String { description }
}
