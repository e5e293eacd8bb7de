import Basics
import CBOR
import Crypto

/// Why a message on a listener connection (`/cable/listen`) was refused.
public enum ListenerMessageError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes are not one canonical CBOR item.
    case invalidCBOR(CBORError)
    /// The item is not a map.
    case notAMap
    /// Key 0 (the type) is absent or not an unsigned integer.
    case missingType
    /// The type is not one this protocol defines (the value given, or -1 when it does not fit).
    case unknownType(Int)
    /// A required key is absent.
    case missingKey(Int)
    /// A key holds the wrong type or size.
    case invalidField(Int)

    public var description: String {
        switch self {
        case .invalidCBOR(let error): "listener message is not canonical CBOR: \(error)"
        case .notAMap: "listener message is not a CBOR map"
        case .missingType: "listener message has no type"
        case .unknownType(let type): "listener message type \(type) is unknown"
        case .missingKey(let key): "listener message lacks key \(key)"
        case .invalidField(let key): "listener message key \(key) is malformed"
        }
    }
}

/// The messages between a phone's listener and its relay on `/cable/listen`, one CBOR map per binary WebSocket
/// message, key 0 the type. This is not part of caBLE: the public tunnel servers wake phones through their vendors'
/// push services, and this self-hosted wake channel replaces that push (Docs/Relay.md, "/cable/contact and
/// listeners").
///
/// | type | direction | keys |
/// |---|---|---|
/// | 1 challenge | relay → phone, first | 1: 32 random bytes, 2: heartbeat interval in seconds |
/// | 2 register | phone → relay | 7: the verifier (32 bytes) |
/// | 3 registered | relay → phone | 3: the new contact ID (32 bytes) |
/// | 4 listen | phone → relay | 3: contact ID, 8: ownership proof (32 bytes) |
/// | 5 listening | relay → phone | — |
/// | 6 revoke | phone → relay | 3: contact ID, 8: ownership proof |
/// | 7 wake | relay → phone | 4: routing ID (3 bytes), 5: tunnel ID (16 bytes), 6: the client payload's CBOR |
/// | 8 heartbeat | both ways | — |
/// | 9 revoked | relay → phone | — |
/// | 10 declined | phone → relay | 5: the tunnel ID of a wake whose link the phone no longer has |
///
/// Refusals end the connection with a close code (``ListenerCloseCode``).
public enum ListenerMessage: Hashable, Sendable {
    case challenge([UInt8], heartbeatSeconds: Int)
    case register(verifier: [UInt8])
    case registered(contactID: [UInt8])
    case listen(contactID: [UInt8], proof: [UInt8])
    case listening
    case revoke(contactID: [UInt8], proof: [UInt8])
    case wake(routingID: RoutingID, tunnelID: TunnelID, clientPayload: [UInt8])
    case heartbeat
    case revoked
    /// The phone no longer has the link a wake is for: the relay ends that contact request with 4410, and the
    /// computer forgets the link.
    case declined(tunnelID: TunnelID)

    /// The largest message either side sends: a wake with a payload of at most 1 KiB and its keys.
    public static let maximumByteCount = 2048
    /// The challenge's length.
    public static let challengeLength = 32

    /// The type number (key 0).
    public var type: Int {
        switch self {
        case .challenge: 1
        case .register: 2
        case .registered: 3
        case .listen: 4
        case .listening: 5
        case .revoke: 6
        case .wake: 7
        case .heartbeat: 8
        case .revoked: 9
        case .declined: 10
        }
    }

    /// The canonical CBOR bytes.
    public var bytes: [UInt8] {
        var map: [CBORValue: CBORValue] = [0: .int(type)]
        switch self {
        case .challenge(let challenge, let seconds):
            map[1] = .bytes(challenge)
            map[2] = .int(seconds)
        case .register(let verifier):
            map[7] = .bytes(verifier)
        case .registered(let contactID):
            map[3] = .bytes(contactID)
        case .listen(let contactID, let proof), .revoke(let contactID, let proof):
            map[3] = .bytes(contactID)
            map[8] = .bytes(proof)
        case .wake(let routingID, let tunnelID, let payload):
            map[4] = .bytes(routingID.bytes)
            map[5] = .bytes(tunnelID.bytes)
            map[6] = .bytes(payload)
        case .declined(let tunnelID):
            map[5] = .bytes(tunnelID.bytes)
        case .listening, .heartbeat, .revoked:
            break
        }
        return CBORValue.map(map).encoded()
    }

    /// Parses one message. Sizes are checked (contact IDs ``ContactOwnership/contactIDLength`` bytes, keys and
    /// proofs 32, routing ID 3, tunnel ID 16); a wake's client payload is only required to be a byte string of at
    /// most ``ClientPayload/maximumHeaderLength`` / 2 bytes (the phone parses it). Unknown keys are ignored.
    public init(bytes: [UInt8]) throws(ListenerMessageError) {
        guard bytes.count <= Self.maximumByteCount else { throw .invalidField(0) }
        let value: CBORValue
        do throws(CBORError) {
            value = try CBORDecoder(maximumDepth: 4).decode(bytes)
        } catch {
            throw .invalidCBOR(error)
        }
        guard let map = value.mapValue else { throw .notAMap }
        guard let type = map[0]?.intValue, type >= 0 else { throw .missingType }
        func field(_ key: Int, count: Int? = nil) throws(ListenerMessageError) -> [UInt8] {
            guard let value = map[.int(key)] else { throw .missingKey(key) }
            guard let bytes = value.bytesValue, count.map({ $0 == bytes.count }) ?? true else {
                throw .invalidField(key)
            }
            return bytes
        }
        let idLength = ContactOwnership.contactIDLength
        switch type {
        case 1:
            guard let seconds = map[2]?.intValue else { throw map[2] == nil ? .missingKey(2) : .invalidField(2) }
            guard (1...86_400).contains(seconds) else { throw .invalidField(2) }
            self = .challenge(try field(1, count: Self.challengeLength), heartbeatSeconds: seconds)
        case 2: self = .register(verifier: try field(7, count: 32))
        case 3: self = .registered(contactID: try field(3, count: idLength))
        case 4: self = .listen(contactID: try field(3, count: idLength), proof: try field(8, count: 32))
        case 5: self = .listening
        case 6: self = .revoke(contactID: try field(3, count: idLength), proof: try field(8, count: 32))
        case 7:
            let routingID = RoutingID(validBytes: try field(4, count: RoutingID.byteCount))
            let tunnelID = TunnelID(validBytes: try field(5, count: TunnelID.byteCount))
            let payload = try field(6)
            guard payload.count <= ClientPayload.maximumHeaderLength / 2 else { throw .invalidField(6) }
            self = .wake(routingID: routingID, tunnelID: tunnelID, clientPayload: payload)
        case 8: self = .heartbeat
        case 9: self = .revoked
        case 10: self = .declined(tunnelID: TunnelID(validBytes: try field(5, count: TunnelID.byteCount)))
        default: throw .unknownType(type)
        }
    }
}

extension ListenerMessage: CustomStringConvertible {
    /// The type and sizes only: contact IDs, proofs and nonces stay out of logs.
    public var description: String {
        switch self {
        case .challenge(_, let seconds): "challenge (heartbeat \(seconds) s)"
        case .register: "register"
        case .registered: "registered"
        case .listen: "listen"
        case .listening: "listening"
        case .revoke: "revoke"
        case .wake(let routingID, _, _): "wake (routing ID \(routingID))"
        case .heartbeat: "heartbeat"
        case .revoked: "revoked"
        case .declined: "declined"
        }
    }
}

/// The path of a listener connection. `/cable/listen` serves every message and is where a phone registers: in a
/// cluster the balancer sends it to any instance, which issues a contact ID starting with its own routing ID.
/// `/cable/listen/{ROUTING_ID}` (6 hex digits, either case) names the instance that issued the contact, so that a
/// balancer routes it there as it routes `/cable/connect/{ROUTING_ID}/…` (path field 4); the phone listens and
/// revokes there. An instance with a configured routing ID refuses another one with 404 (`unknownRoutingID`).
public struct ListenerPath: Hashable, Sendable, CustomStringConvertible {
    /// The path without a routing ID.
    public static let registration = "/cable/listen"

    /// The instance named in the path; nil for `/cable/listen`.
    public var routingID: RoutingID?

    /// `/cable/listen`, or `/cable/listen/{ROUTING_ID}` when `routingID` is given.
    public init(routingID: RoutingID? = nil) {
        self.routingID = routingID
    }

    /// The path for listening and revoking with `contactID`: the routing ID it starts with, or `/cable/listen`
    /// when it has not the length of a contact ID.
    public init(contactID: [UInt8]) {
        routingID = ContactOwnership.routingID(of: contactID)
    }

    /// Parses a request path: `/cable/listen` or `/cable/listen/{ROUTING_ID}`, nothing after (no query, no trailing
    /// slash). Throws ``TunnelPathError/unknownPath`` for any other path, ``TunnelPathError/invalidRoutingID`` when
    /// the segment after `/cable/listen/` is not 6 hex digits.
    public init(path: some StringProtocol) throws(TunnelPathError) {
        let utf8 = path.utf8
        let base = Self.registration.utf8
        guard utf8.starts(with: base) else { throw .unknownPath }
        let rest = utf8.dropFirst(base.count)
        if rest.isEmpty {
            routingID = nil
            return
        }
        guard rest.first == UInt8(ascii: "/") else { throw .unknownPath }
        let segment = String(decoding: rest.dropFirst(), as: UTF8.self)
        guard let routingID = try? RoutingID(hex: segment) else { throw .invalidRoutingID }
        self.routingID = routingID
    }

    /// The path, with upper-case hex.
    public var path: String { Self.registration + (routingID.map { "/\($0.hex)" } ?? "") }

    public var description: String { path }
}

/// The WebSocket close codes of `/cable/listen` and `/cable/contact` (private-use range 4000–4999, RFC 6455 §7.4.2),
/// each 4000 plus the HTTP status it resembles.
public enum ListenerCloseCode {
    /// Listener: a message that does not parse, or is not allowed at this point.
    public static let badMessage: UInt16 = 4400
    /// Listener: the ownership proof does not verify.
    public static let forgedProof: UInt16 = 4401
    /// Contact: no phone joined the tunnel within the relay's wait (no listener, or it did not answer).
    public static let phoneUnreachable: UInt16 = 4404
    /// Listener: no message in time (the challenge's answer, or a heartbeat).
    public static let timedOut: UInt16 = 4408
    /// Listener: the contact ID is unknown (revoked, expired, or never registered here). Contact: the phone no longer
    /// has the link (it declined the wake): forget the link, as after a 410.
    public static let unknownContact: UInt16 = 4410
    /// Listener: the relay holds as many contacts as it may.
    public static let tooManyContacts: UInt16 = 4429

    /// A one-line explanation of a code from this set, or nil.
    public static func describe(_ code: UInt16) -> String? {
        switch code {
        case badMessage: "the relay refused a listener message"
        case forgedProof: "the relay refused the ownership proof"
        case phoneUnreachable: "no phone answered the wake within the relay's wait"
        case timedOut: "the relay timed the listener out"
        case unknownContact: "the contact or the link is gone (revoked, expired or never registered)"
        case tooManyContacts: "the relay holds as many contacts as it may"
        default: nil
        }
    }
}

/// How a phone proves that it owns a contact ID without the relay ever holding the phone's secret, and how the
/// relay stores what it needs (Docs/Relay.md):
///
/// - the phone keeps a 32-byte *listener secret* `s`; it registers `verifier = HMAC-SHA256(s, "passkey listener
///   verifier v1")` and gets a contact ID: the relay's routing ID (3 bytes) ‖ 29 random bytes;
/// - each listener connection starts with a 32-byte challenge; the phone answers with
///   `proof = HMAC-SHA256(verifier, "passkey listener proof v1" ‖ challenge ‖ contact ID)`;
/// - the relay keeps, per contact, only `SHA-256(contact ID)` and the verifier sealed with AES-256-GCM under
///   `HKDF-SHA256(contact ID, info "passkey relay verifier seal v1")`, the hash as associated data. A copy of the
///   relay's contact file therefore gives neither the contact IDs (to wake phones) nor the verifiers (to answer
///   challenges); the relay sees each contact ID only while a request that names it is being handled.
public enum ContactOwnership {
    /// A contact ID's length: routing ID and 29 random bytes.
    public static let contactIDLength = 32
    /// The random part's length.
    public static let randomLength = contactIDLength - RoutingID.byteCount

    /// The verifier a phone registers for its listener secret.
    public static func verifier(listenerSecret: [UInt8]) -> [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(for: Array("passkey listener verifier v1".utf8), using: key(listenerSecret))
        )
    }

    /// The answer to `challenge` for `contactID`.
    public static func proof(verifier: [UInt8], challenge: [UInt8], contactID: [UInt8]) -> [UInt8] {
        let message = Array("passkey listener proof v1".utf8) + challenge + contactID
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: key(verifier)))
    }

    /// Whether `proof` answers `challenge` for `contactID`, compared in constant time.
    public static func verify(proof: [UInt8], verifier: [UInt8], challenge: [UInt8], contactID: [UInt8]) -> Bool {
        let expected = Self.proof(verifier: verifier, challenge: challenge, contactID: contactID)
        guard proof.count == expected.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(proof, expected) { difference |= a ^ b }
        return difference == 0
    }

    /// The relay's key for a contact: `SHA-256(contact ID)`.
    public static func hash(contactID: [UInt8]) -> [UInt8] { SHA256.hash(data: contactID).bytes }

    /// The verifier sealed for storage: `nonce ‖ ciphertext ‖ tag` (60 bytes for a 32-byte verifier).
    public static func seal(verifier: [UInt8], contactID: [UInt8]) -> [UInt8]? {
        let box = try? AES.GCM.seal(
            verifier, using: sealingKey(contactID), nonce: AES.GCM.Nonce(), authenticating: hash(contactID: contactID))
        return box?.combined.map(Array.init)
    }

    /// Opens a sealed verifier with the contact ID that was named; nil when it does not open (a different ID).
    public static func unseal(_ sealed: [UInt8], contactID: [UInt8]) -> [UInt8]? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let opened = try? AES.GCM.open(
                box, using: sealingKey(contactID), authenticating: hash(contactID: contactID))
        else { return nil }
        return Array(opened)
    }

    /// The routing ID a contact ID starts with: a load balancer sends `/cable/contact/…` to the relay instance that
    /// registered it.
    public static func routingID(of contactID: [UInt8]) -> RoutingID? {
        guard contactID.count == contactIDLength else { return nil }
        return RoutingID(validBytes: Array(contactID.prefix(RoutingID.byteCount)))
    }

    private static func key(_ bytes: [UInt8]) -> SymmetricKey { SymmetricKey(data: bytes) }

    private static func sealingKey(_ contactID: [UInt8]) -> SymmetricKey {
        SymmetricKey(
            data: HKDFSHA256.derive(
                inputKeyMaterial: contactID, salt: [], info: Array("passkey relay verifier seal v1".utf8), length: 32))
    }
}
