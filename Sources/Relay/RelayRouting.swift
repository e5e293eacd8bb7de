import Basics
import Hybrid

/// Why a routing ID or contact ID could not be made.
public enum RelayRoutingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An instance number outside 0…0xFFFFFF (it must fit the routing ID's 3 bytes).
    case instanceOutOfRange(Int)
    /// The random part of a contact ID is not ``RelayRouting/contactIDRandomByteCount`` bytes (count given).
    case wrongRandomLength(Int)

    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .instanceOutOfRange(let instance): "instance \(instance) is not 0–16777215"
        case .wrongRandomLength(let count):
            "a contact ID takes \(RelayRouting.contactIDRandomByteCount) random bytes, not \(count)"
        }
    }
}

/// How several relay instances behind one load balancer find the instance that holds a tunnel or a contact.
///
/// Every instance has its own 3-byte routing ID. It hands that ID out in `X-caBLE-Routing-ID` on every
/// `/cable/new`, the phone puts it in its BLE advert, and the computer sends it back in
/// `/cable/connect/{ROUTING_ID}/{TUNNEL_ID}`: the balancer routes `/connect` by path field 4, and an instance
/// refuses (404) a routing ID that is not its own.
///
/// Contact IDs (linked hybrid, `/cable/contact/{CONTACT_ID}`) that an instance hands out start with the same
/// routing ID: `routing ID (3 bytes) ‖ 29 random bytes`, 32 bytes, written as 43 characters of unpadded
/// base64url in paths. Base64url encodes 3 bytes as exactly 4 characters, so the first 4 characters of the path
/// segment are the routing ID and nothing else (``contactIDPrefix(_:)``): a balancer routes `/contact` with a map
/// keyed by them, without decoding anything.
public enum RelayRouting {
    /// The length of a contact ID this relay hands out.
    public static let contactIDByteCount = RoutingID.byteCount + contactIDRandomByteCount
    /// The random bytes after the routing ID in a contact ID.
    public static let contactIDRandomByteCount = 29
    /// The base64url characters that encode the routing ID at the start of a contact ID's path segment.
    public static let contactIDPrefixLength = 4

    /// The routing ID of instance `instance` of a cluster (`passkey-relay --instance N`): the number as 3
    /// big-endian bytes, so instance 1 is `000001` and instance 300 is `00012C`.
    public static func routingID(instance: Int) throws(RelayRoutingError) -> RoutingID {
        guard (0...0xFF_FFFF).contains(instance) else { throw .instanceOutOfRange(instance) }
        let bytes = [
            UInt8(instance >> 16), UInt8(truncatingIfNeeded: instance >> 8), UInt8(truncatingIfNeeded: instance),
        ]
        return try! RoutingID(bytes: bytes)  // three bytes
    }

    /// A contact ID for the instance with `routingID`: the routing ID, then `random` (29 bytes).
    public static func contactID(routingID: RoutingID, random: [UInt8]) throws(RelayRoutingError) -> [UInt8] {
        guard random.count == contactIDRandomByteCount else { throw .wrongRandomLength(random.count) }
        return routingID.bytes + random
    }

    /// The routing ID a contact ID starts with; `nil` when it is not ``contactIDByteCount`` bytes (not one of ours).
    public static func routingID(ofContactID contactID: [UInt8]) -> RoutingID? {
        guard contactID.count == contactIDByteCount else { return nil }
        return try? RoutingID(bytes: Array(contactID.prefix(RoutingID.byteCount)))
    }

    /// The routing ID a contact ID's path segment (unpadded base64url) starts with, read from its first
    /// ``contactIDPrefixLength`` characters alone, as a load balancer does; `nil` when they are not base64url.
    public static func routingID(ofContactIDSegment segment: some StringProtocol) -> RoutingID? {
        guard segment.utf8.count >= contactIDPrefixLength,
            let bytes = [UInt8](canonicalBase64URLEncoded: segment.prefix(contactIDPrefixLength))
        else { return nil }
        return try? RoutingID(bytes: bytes)
    }

    /// The first ``contactIDPrefixLength`` characters of the path segment of every contact ID that starts with
    /// `routingID`: the key of the balancer's `/contact` map.
    public static func contactIDPrefix(_ routingID: RoutingID) -> String {
        routingID.bytes.base64URLEncodedString
    }
}
