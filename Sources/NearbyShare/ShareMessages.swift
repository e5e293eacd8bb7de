import Basics
import CBOR
import CredentialExchange

/// The share protocol's constants. After the hybrid handshake the receiver (the hybrid client) sends requests and
/// the sender (the hybrid authenticator) answers them, in the tunnel's CTAP frames (type 1), with command bytes
/// from CTAP's vendor range (0x40–0xBF), so no CTAP authenticator mistakes them for its own commands:
///
/// ```
/// receiver → sender   0x41 ‖ {1: 1}                          share request (protocol version 1)
/// sender → receiver   0x00 ‖ {1: 1, 2: enc(65), 3: sealed}   the share message: one CXF item sealed with HPKE
/// receiver → sender   0x42 ‖ {1: outcome}                    acknowledgement
/// sender → receiver   0x00                                   acknowledgement received
/// receiver → sender   shutdown (frame type 0)
/// ```
///
/// Any other command, a second share request, or a message out of this order is answered with an error status and
/// ends the share on both sides.
public enum ShareProtocol {
    /// The `info` of the HPKE seal (RFC 9180 §5.1): separates a shared passkey from any other HPKE payload.
    public static let hpkeInfo = Array("passkey share v1".utf8)
    /// What the sender's post-handshake message carries where a phone puts its getInfo: `{1: ["PASSKEY_SHARE_V1"]}`,
    /// the versions field naming this protocol, so a receiver knows it reached a sender and not a phone.
    public static let senderInfo = CBORValue.map([1: .array([.text(senderVersion)])]).encoded()
    /// The version string in `senderInfo`.
    public static let senderVersion = "PASSKEY_SHARE_V1"
    /// The largest sealed item accepted: far above one passkey (a few hundred bytes), below the tunnel's limit.
    public static let maximumSealedBytes = 16 * 1024

    /// Checks the sender's post-handshake "getInfo": a map whose key 1 lists `senderVersion`.
    public static func checkSenderInfo(_ bytes: [UInt8]) throws(ShareError) {
        guard let map = (try? CBORValue(decoding: bytes))?.mapValue,
            let versions = map[1]?.arrayValue,
            versions.contains(.text(senderVersion))
        else { throw ShareError(.notASharePeer, "the other device is not sharing a passkey (it sent no share info)") }
    }
}

/// The request command bytes (CTAP vendor range).
public struct ShareCommand: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The receiver asks for the share message.
    public static let request = ShareCommand(rawValue: 0x41)
    /// The receiver says what it did with the passkey.
    public static let acknowledge = ShareCommand(rawValue: 0x42)
}

/// What the receiver did with the shared passkey, as the acknowledgement carries it. Unknown values survive.
public struct ShareOutcome: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Added to the receiver's store.
    public static let added = ShareOutcome(rawValue: 0)
    /// The receiver's store already held this credential ID; nothing changed.
    public static let alreadyPresent = ShareOutcome(rawValue: 1)
    /// The person at the receiver said no.
    public static let declined = ShareOutcome(rawValue: 2)
    /// The share message did not open or check; nothing was stored.
    public static let refused = ShareOutcome(rawValue: 3)

    public var description: String {
        switch self {
        case .added: "added"
        case .alreadyPresent: "already present"
        case .declined: "declined"
        case .refused: "refused"
        default: "outcome \(rawValue)"
        }
    }
}

/// A message from the receiver: a CTAP-framed request, `command ‖ CBOR map`.
public enum ShareRequestMessage: Hashable, Sendable {
    /// `0x41 ‖ {1: version}`.
    case request(version: UInt64)
    /// `0x42 ‖ {1: outcome}`.
    case acknowledge(ShareOutcome)

    /// Parses one request; the map must be canonical CBOR with its keys of the right type (unknown keys ignored).
    public init(bytes: [UInt8]) throws(ShareError) {
        guard let command = bytes.first else { throw .malformed("an empty request") }
        let map = try Self.map(Array(bytes.dropFirst()))
        switch ShareCommand(rawValue: command) {
        case .request:
            guard case .unsigned(let version) = map[1] else { throw .malformed("a share request without a version") }
            self = .request(version: version)
        case .acknowledge:
            guard case .unsigned(let outcome) = map[1] else {
                throw .malformed("an acknowledgement without an outcome")
            }
            self = .acknowledge(ShareOutcome(rawValue: outcome))
        default:
            throw ShareError(.unexpectedMessage, "a request with command 0x\(hex(command)), not a share command")
        }
    }

    /// The bytes to send.
    public var bytes: [UInt8] {
        switch self {
        case .request(let version): [ShareCommand.request.rawValue] + CBORValue.map([1: .unsigned(version)]).encoded()
        case .acknowledge(let outcome):
            [ShareCommand.acknowledge.rawValue] + CBORValue.map([1: .unsigned(outcome.rawValue)]).encoded()
        }
    }

    static func map(_ bytes: [UInt8]) throws(ShareError) -> [CBORValue: CBORValue] {
        let value: CBORValue
        do {
            value = try CBORValue(decoding: bytes)
        } catch {
            throw .malformed("a message that is not canonical CBOR (\(error))")
        }
        guard let map = value.mapValue else { throw .malformed("a message that is not a CBOR map") }
        return map
    }
}

/// The share message: the sender's answer to the share request, `0x00 ‖ {1: version, 2: enc, 3: ciphertext}`.
/// `enc` is HPKE's encapsulated key (65 bytes, an uncompressed P-256 point) and `ciphertext` the sealed CXF
/// document with its tag.
public struct ShareOffer: Hashable, Sendable {
    /// The protocol version, 1.
    public var version: UInt64
    /// The HPKE output.
    public var sealed: ExchangeHPKE.Sealed

    public init(version: UInt64 = 1, sealed: ExchangeHPKE.Sealed) {
        self.version = version
        self.sealed = sealed
    }

    /// Parses an answer to the share request. A non-zero status byte is the sender's refusal.
    public init(response: [UInt8]) throws(ShareError) {
        guard let status = response.first else { throw .malformed("an empty answer") }
        guard status == 0 else {
            throw ShareError(.senderRefused, "the sender refused the share request (status 0x\(hex(status)))")
        }
        let map = try ShareRequestMessage.map(Array(response.dropFirst()))
        guard case .unsigned(let version) = map[1] else { throw .malformed("a share message without a version") }
        guard version == 1 else {
            throw ShareError(.unsupportedVersion, "a share message of version \(version); this program speaks 1")
        }
        guard let encapsulatedKey = map[2]?.bytesValue, encapsulatedKey.count == 65 else {
            throw .malformed("a share message without a 65-byte encapsulated key")
        }
        guard let ciphertext = map[3]?.bytesValue, (16...ShareProtocol.maximumSealedBytes).contains(ciphertext.count)
        else { throw .malformed("a share message without a sealed item of 16 to 16384 bytes") }
        self.init(version: version, sealed: .init(encapsulatedKey: encapsulatedKey, ciphertext: ciphertext))
    }

    /// The answer's bytes: status 0, then the map.
    public var response: [UInt8] {
        [0x00]
            + CBORValue.map([
                1: .unsigned(version), 2: .bytes(sealed.encapsulatedKey), 3: .bytes(sealed.ciphertext),
            ]).encoded()
    }
}

extension ShareError {
    static func malformed(_ what: String) -> ShareError {
        ShareError(.malformedMessage, "the other device sent \(what)")
    }
}

func hex(_ byte: UInt8) -> String { [byte].upperHexString }
