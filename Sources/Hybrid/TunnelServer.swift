import Basics
import Crypto

// MARK: - Identifiers

/// Why a routing ID or tunnel ID was refused.
public enum TunnelIdentifierError: Error, Hashable, Sendable {
    /// The bytes or hex digits are not the length the identifier has (count given).
    case wrongLength(Int)
    /// The text contains a character that is not a hexadecimal digit.
    case notHex
}

extension TunnelIdentifierError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .wrongLength(let count): "identifier has the wrong length (\(count))"
        case .notHex: "identifier is not hexadecimal"
        }
    }
}

/// The 3-byte routing ID a tunnel server hands the authenticator in the `X-caBLE-Routing-ID` header of
/// `/cable/new`, carried in the BLE advert and sent back by the client in `/cable/connect`.
///
/// The bytes are in the order the hex string shows them. Hex is written in upper case, as Chromium's
/// `base::HexEncode` does, and read in either case, as `base::HexStringToSpan` does.
public struct RoutingID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier's length in bytes (`kRoutingIdSize`).
    public static let byteCount = 3

    /// The three bytes.
    public let bytes: [UInt8]

    /// Takes exactly three bytes.
    public init(bytes: [UInt8]) throws(TunnelIdentifierError) {
        guard bytes.count == Self.byteCount else { throw .wrongLength(bytes.count) }
        self.bytes = bytes
    }

    /// For callers that took exactly `byteCount` bytes themselves.
    init(validBytes: [UInt8]) { bytes = validBytes }

    /// Parses six hex digits in either case, such as the value of an `X-caBLE-Routing-ID` header.
    ///
    /// Nothing else is accepted: the HTTP layer strips the optional whitespace around header values, and
    /// Chromium rejects a response that carries the header twice (`websocket_adapter.cc`).
    public init(hex: some StringProtocol) throws(TunnelIdentifierError) {
        bytes = try parseHex(hex, byteCount: Self.byteCount)
    }

    /// Six upper-case hex digits.
    public var hex: String { bytes.upperHexString }

    /// A one-line explanation for logs and error messages.
    public var description: String { hex }
}

/// The 16-byte tunnel ID: `Derive(qr_secret, "", kTunnelID, 16)` in the QR flow, chosen by the tunnel
/// server in the linked flow. Written as upper-case hex in tunnel URLs, read in either case.
public struct TunnelID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier's length in bytes.
    public static let byteCount = 16

    /// The sixteen bytes.
    public let bytes: [UInt8]

    /// Takes exactly sixteen bytes.
    public init(bytes: [UInt8]) throws(TunnelIdentifierError) {
        guard bytes.count == Self.byteCount else { throw .wrongLength(bytes.count) }
        self.bytes = bytes
    }

    /// For callers that produced exactly `byteCount` bytes themselves.
    init(validBytes: [UInt8]) { bytes = validBytes }

    /// Parses 32 hex digits in either case.
    public init(hex: some StringProtocol) throws(TunnelIdentifierError) {
        bytes = try parseHex(hex, byteCount: Self.byteCount)
    }

    /// 32 upper-case hex digits.
    public var hex: String { bytes.upperHexString }

    /// A one-line explanation for logs and error messages.
    public var description: String { hex }

    /// The sixteen bytes in one call: the relay looks a tunnel up by its ID for every message, and an array's own
    /// hashing feeds the hasher a byte at a time.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

// MARK: - Domains

/// Why a tunnel server domain ID was refused.
public enum TunnelDomainError: Error, Hashable, Sendable {
    /// IDs 2–255 are reserved for domains not yet assigned.
    case unassigned(UInt16)
}

extension TunnelDomainError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .unassigned(let id):
            "tunnel server domain \(id) is reserved: only 0, 1 and 256–65535 name a domain"
        }
    }
}

/// A tunnel server, named by the 16-bit ID an authenticator puts in its BLE advert.
///
/// IDs below 256 index Chromium's list of assigned domains (0 `cable.ua5v.com`, Google; 1 `cable.auth.com`,
/// Apple); IDs from 256 up name a domain derived from a hash of the ID, so anyone can run a tunnel server
/// without an assignment. Chromium's `tunnelserver::ToKnownDomainID` accepts `id < 2 || id >= 256`.
public struct TunnelDomain: Hashable, Sendable, CustomStringConvertible {
    /// Chromium's `kAssignedDomains`.
    static let assignedHosts = ["cable.ua5v.com", "cable.auth.com"]

    /// How many IDs below 256 name a domain: the value Chromium writes in QR key 2.
    public static let assignedDomainCount = assignedHosts.count

    /// Google's tunnel server, `cable.ua5v.com`: the one Chromium's Android authenticator uses.
    public static let google = TunnelDomain(validID: 0)
    /// Apple's tunnel server, `cable.auth.com`.
    public static let apple = TunnelDomain(validID: 1)

    /// The ID as it travels in the advert (little-endian there).
    public let id: UInt16

    /// Accepts 0, 1 and 256–65535.
    public init(id: UInt16) throws(TunnelDomainError) {
        guard Self.isValid(id) else { throw .unassigned(id) }
        self.id = id
    }

    private init(validID: UInt16) { id = validID }

    /// Whether `id` names a domain (Chromium `tunnelserver::ToKnownDomainID`).
    public static func isValid(_ id: UInt16) -> Bool { id < 2 || id >= 256 }

    /// Whether the ID is one of the hash-derived domains (256 and up).
    public var isHashed: Bool { id >= 256 }

    /// The host name (Chromium `tunnelserver::DecodeDomain`).
    ///
    /// For hashed IDs: SHA-256 over `"caBLEv2 tunnel server domain" ‖ id (UInt16 LE) ‖ 0x00`; the first eight
    /// digest bytes as a little-endian UInt64 `v`; `v & 3` picks the TLD (com, org, net, info); then `v >> 2` is
    /// written in base32 (a–z, 2–7), least significant 5 bits first, until it is zero.
    public var host: String {
        guard isHashed else { return Self.assignedHosts[Int(id)] }
        var input = Array("caBLEv2 tunnel server domain".utf8)
        input.append(UInt8(truncatingIfNeeded: id))
        input.append(UInt8(truncatingIfNeeded: id >> 8))
        input.append(0)  // Chromium hashes the template's terminating NUL too.
        let digest = SHA256.hash(data: input).bytes
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(digest[index]) << (8 * UInt64(index)) }
        let tlds = ["com", "org", "net", "info"]
        let tld = tlds[Int(value & 3)]
        value >>= 2
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var name = Array("cable.".utf8)
        while value != 0 {
            name.append(alphabet[Int(value & 31)])
            value >>= 5
        }
        return String(decoding: name, as: UTF8.self) + "." + tld
    }

    /// A one-line explanation for logs and error messages.
    public var description: String { "\(id) (\(host))" }
}

// MARK: - Paths

/// Why a tunnel server request path was refused.
public enum TunnelPathError: Error, Hashable, Sendable {
    /// The path is not `/cable/new/…`, `/cable/connect/…/…` or `/cable/contact/…` with that many segments.
    case unknownPath
    /// The tunnel ID segment is not 32 hex digits.
    case invalidTunnelID
    /// The routing ID segment is not 6 hex digits.
    case invalidRoutingID
    /// The contact ID segment is empty or not canonical unpadded base64url.
    case invalidContactID
}

extension TunnelPathError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .unknownPath: "not a tunnel server path (/cable/new/…, /cable/connect/…/…, /cable/contact/…)"
        case .invalidTunnelID: "tunnel ID is not 32 hexadecimal digits"
        case .invalidRoutingID: "routing ID is not 6 hexadecimal digits"
        case .invalidContactID: "contact ID is not unpadded base64url"
        }
    }
}

/// The path of a WebSocket request to a tunnel server, as the client and authenticator write it and as a
/// relay server reads it (Chromium `GetNewTunnelURL`, `GetConnectURL`, `GetContactURL`).
public enum TunnelPath: Hashable, Sendable {
    /// `/cable/new/{TUNNEL_ID}`: the authenticator opens a tunnel (QR flow); the answer carries the routing ID.
    case new(TunnelID)
    /// `/cable/connect/{ROUTING_ID}/{TUNNEL_ID}`: the client (QR flow) or the woken phone (linked flow) joins.
    case connect(RoutingID, TunnelID)
    /// `/cable/contact/{CONTACT_ID}`: the client asks the server to wake a linked phone; the contact ID is
    /// opaque bytes from the linking information, written as unpadded base64url.
    case contact([UInt8])

    /// Parses a request target. Hex may be in either case; a query (`?…`, which a proxy or a client library may
    /// add) is ignored; nothing else may follow the last segment (no trailing slash).
    public init(path: some StringProtocol) throws(TunnelPathError) {
        let target = path.utf8
        let withoutQuery = target[..<(target.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
        let segments = withoutQuery.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard segments.count >= 4, segments[0].isEmpty, segments[1].elementsEqual("cable".utf8) else {
            throw .unknownPath
        }
        let kind = segments[2]
        if kind.elementsEqual("new".utf8), segments.count == 4 {
            self = .new(try Self.tunnelID(segments[3]))
        } else if kind.elementsEqual("connect".utf8), segments.count == 5 {
            guard let routingID = try? RoutingID(hex: String(decoding: segments[3], as: UTF8.self)) else {
                throw .invalidRoutingID
            }
            self = .connect(routingID, try Self.tunnelID(segments[4]))
        } else if kind.elementsEqual("contact".utf8), segments.count == 4 {
            guard let contactID = [UInt8](canonicalBase64URLEncoded: String(decoding: segments[3], as: UTF8.self)),
                !contactID.isEmpty
            else {
                throw .invalidContactID
            }
            self = .contact(contactID)
        } else {
            throw .unknownPath
        }
    }

    private static func tunnelID(_ segment: some Collection<UInt8>) throws(TunnelPathError) -> TunnelID {
        guard let id = try? TunnelID(hex: String(decoding: segment, as: UTF8.self)) else { throw .invalidTunnelID }
        return id
    }

    /// The path, with upper-case hex and unpadded base64url.
    public var path: String {
        switch self {
        case .new(let tunnelID): "/cable/new/\(tunnelID.hex)"
        case .connect(let routingID, let tunnelID): "/cable/connect/\(routingID.hex)/\(tunnelID.hex)"
        case .contact(let contactID): "/cable/contact/\(contactID.base64URLEncodedString)"
        }
    }
}

// MARK: - Endpoints

/// Why a tunnel server base URL was refused.
public enum TunnelServerURLError: Error, Hashable, Sendable {
    /// The scheme is not `ws` or `wss`.
    case unsupportedScheme
    /// There is no host, or it has characters a host name or bracketed IPv6 address cannot have.
    case invalidHost
    /// The port is not a number from 1 to 65535.
    case invalidPort
    /// The URL has user information, a path, a query or a fragment: only scheme, host and port may be given.
    case unexpectedComponent
}

extension TunnelServerURLError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .unsupportedScheme: "tunnel server URL must start with ws:// or wss://"
        case .invalidHost: "tunnel server URL has no valid host"
        case .invalidPort: "tunnel server URL has an invalid port"
        case .unexpectedComponent: "tunnel server URL may only have a scheme, host and port (no path or query)"
        }
    }
}

/// Scheme, host and port of a self-hosted tunnel server, such as `ws://127.0.0.1:8080`, replacing the
/// `wss://{domain}` Chromium derives from the domain ID. For tests and private relays.
public struct TunnelServerBaseURL: Hashable, Sendable, CustomStringConvertible {
    /// `ws` or `wss`, lower case.
    public let scheme: String
    /// A host name, IPv4 address or bracketed IPv6 address (`[::1]`), as given.
    public let host: String
    /// The port, when one is given.
    public let port: UInt16?

    /// Parses `ws[s]://host[:port]`, with at most a single trailing `/`. The scheme is matched in any case.
    public init(string: some StringProtocol) throws(TunnelServerURLError) {
        var rest = Substring(string)
        let schemes = ["wss://", "ws://"]
        let matches = { (scheme: String) in
            rest.utf8.count >= scheme.utf8.count
                && zip(rest.utf8, scheme.utf8).allSatisfy { $0 == $1 || $0 | 0x20 == $1 && $1 >= UInt8(ascii: "a") }
        }
        guard let scheme = schemes.first(where: matches) else { throw .unsupportedScheme }
        self.scheme = String(scheme.dropLast(3))
        // Dropped by bytes, so a combining mark after the "//" stays with the host and is refused there.
        rest = Substring(String(decoding: rest.utf8.dropFirst(scheme.utf8.count), as: UTF8.self))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains(where: { "/?#@".contains($0) }) else { throw .unexpectedComponent }
        var hostPart = rest
        var portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalidHost }
            hostPart = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidHost }
                portPart = after.dropFirst()
            }
            let inner = hostPart.dropFirst().dropLast()
            guard !inner.isEmpty, inner.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") }) else {
                throw .invalidHost
            }
        } else {
            if let colon = rest.firstIndex(of: ":") {
                hostPart = rest[..<colon]
                portPart = rest[rest.index(after: colon)...]
            }
            guard !hostPart.isEmpty,
                hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
            else { throw .invalidHost }
        }
        host = String(hostPart)
        if let portPart {
            guard (1...5).contains(portPart.count), portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
                let port = UInt16(portPart), port != 0
            else { throw .invalidPort }
            self.port = port
        } else {
            port = nil
        }
    }

    /// `scheme://host[:port]`, without a trailing slash.
    public var string: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }

    /// A one-line explanation for logs and error messages.
    public var description: String { string }
}

/// Where tunnel requests go: the domain an ID names, reached over `wss`, or a base URL override.
public enum TunnelServerEndpoint: Hashable, Sendable {
    /// `wss://{domain.host}`, as Chromium connects.
    case domain(TunnelDomain)
    /// A self-hosted relay; its scheme, host and port replace the domain's.
    case override(TunnelServerBaseURL)

    /// The full WebSocket URL of `path` on this server, such as
    /// `wss://cable.ua5v.com/cable/connect/026555/367CBBF5F5085DF4098476AFE4B9B1D2`.
    public func url(for path: TunnelPath) -> String {
        switch self {
        case .domain(let domain): "wss://\(domain.host)\(path.path)"
        case .override(let base): base.string + path.path
        }
    }
}

/// Constants of the tunnel server's HTTP interface (Chromium `device/fido/fido_constants.h`).
public enum TunnelServerProtocol {
    /// The WebSocket subprotocol both sides request; Chromium drops the connection unless the server selects it.
    public static let webSocketSubprotocol = "fido.cable"
    /// The response header of `/cable/new` that carries the routing ID as six hex digits (name matched in any case).
    public static let routingIDHeader = "X-caBLE-Routing-ID"
}

// MARK: - Helpers

/// Reads exactly `byteCount` bytes of hex in either case.
private func parseHex(_ text: some StringProtocol, byteCount: Int) throws(TunnelIdentifierError) -> [UInt8] {
    let length = text.utf8.count
    guard length == 2 * byteCount else { throw .wrongLength(length) }
    guard let bytes = [UInt8](hex: text) else { throw .notHex }
    return bytes
}
