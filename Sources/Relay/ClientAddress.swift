/// An IPv4 or IPv6 address as its bytes, parsed without the network stack.
///
/// IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, what a dual-stack socket reports for an IPv4 peer) are
/// taken as the IPv4 address they carry, so that one client counts the same whichever socket it came in on.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 bytes (IPv6), in network order.
    public let bytes: [UInt8]

    /// Parses dotted IPv4 (`192.0.2.1`) or textual IPv6 (`2001:db8::1`, `::ffff:192.0.2.1`, `[::1]`,
    /// `fe80::1%eth0`: brackets and a zone are dropped). `nil` for anything else, host names included.
    public init?(_ text: some StringProtocol) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        if let v4 = Self.parseIPv4(text) {
            bytes = v4
        } else if let v6 = Self.parseIPv6(text) {
            let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
            bytes = Array(v6.prefix(12)) == mapped ? Array(v6.suffix(4)) : v6
        } else {
            return nil
        }
    }

    /// Wraps 4 or 16 bytes.
    init(uncheckedBytes bytes: [UInt8]) { self.bytes = bytes }

    /// Whether this is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// Dotted IPv4, or IPv6 as eight hexadecimal groups without leading zeros or `::` compression.
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let byte = UInt8(part, radix: 10) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        /// Hexadecimal groups of one side of `::`; the last may be a dotted IPv4 address (two groups).
        func groups(_ side: Substring, mayEndInIPv4: Bool) -> [UInt16]? {
            guard !side.isEmpty else { return [] }
            var result: [UInt16] = []
            let parts = side.split(separator: ":", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() {
                if index == parts.count - 1, mayEndInIPv4, part.contains("."), let v4 = parseIPv4(part) {
                    result += [UInt16(v4[0]) << 8 | UInt16(v4[1]), UInt16(v4[2]) << 8 | UInt16(v4[3])]
                } else {
                    guard (1...4).contains(part.count), part.allSatisfy(\.isHexDigit),
                        let group = UInt16(part, radix: 16)
                    else { return nil }
                    result.append(group)
                }
            }
            return result
        }
        let all: [UInt16]
        if let gap = text.firstRange(of: "::") {
            let tail = text[gap.upperBound...]
            guard !tail.contains("::"), let head = groups(text[..<gap.lowerBound], mayEndInIPv4: false),
                let rest = groups(tail, mayEndInIPv4: true), head.count + rest.count <= 7
            else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - rest.count) + rest
        } else {
            guard let parsed = groups(text, mayEndInIPv4: true), parsed.count == 8 else { return nil }
            all = parsed
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

/// Why an address or network could not be parsed.
public enum AddressError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Not an IPv4 or IPv6 address.
    case notAnAddress(String)
    /// The prefix length is not 0–32 (IPv4) or 0–128 (IPv6).
    case prefixLengthOutOfRange(Int)

    public var description: String {
        switch self {
        case .notAnAddress(let text): "\(text) is not an IPv4 or IPv6 address"
        case .prefixLengthOutOfRange(let length): "prefix length \(length) is out of range (IPv4 0–32, IPv6 0–128)"
        }
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`; a bare address is the range of itself).
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the range: the bits past the prefix are zero.
    public let address: IPAddress
    /// How many leading bits every address of the range shares.
    public let prefixLength: Int

    /// The range of the addresses sharing the first `prefixLength` bits of `address`.
    public init(address: IPAddress, prefixLength: Int) throws(AddressError) {
        guard (0...address.bytes.count * 8).contains(prefixLength) else { throw .prefixLengthOutOfRange(prefixLength) }
        self.address = IPAddress(uncheckedBytes: Self.masked(address.bytes, prefixLength))
        self.prefixLength = prefixLength
    }

    /// Parses `ADDRESS/LENGTH` or a bare address.
    public init(_ text: String) throws(AddressError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { throw .notAnAddress(text) }
        var length = address.bytes.count * 8
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), let parsed = Int(parts[1]) else {
                throw .notAnAddress(text)
            }
            length = parsed
        }
        try self.init(address: address, prefixLength: length)
    }

    /// Whether `candidate` is in the range (an IPv4 address is never in an IPv6 range, nor the reverse).
    public func contains(_ candidate: IPAddress) -> Bool {
        candidate.bytes.count == address.bytes.count && Self.masked(candidate.bytes, prefixLength) == address.bytes
    }

    /// `ADDRESS/LENGTH`.
    public var description: String { "\(address)/\(prefixLength)" }

    private static func masked(_ bytes: [UInt8], _ prefixLength: Int) -> [UInt8] {
        bytes.indices.map { index in
            let bits = min(max(prefixLength - index * 8, 0), 8)
            return bits == 8 ? bytes[index] : bytes[index] & ~(0xFF >> bits)
        }
    }
}

/// Whom a connection is counted against by the per-address limits: which address is the client's, and how
/// much of it names one client.
///
/// - The client's address is the TCP peer's, unless the peer is one of ``trustedProxies``: then it is the
///   right-most address of `X-Forwarded-For` that is not itself a trusted proxy (each proxy appends the
///   address it received the request from, so addresses further left are the client's own word and can be
///   forged). A trusted proxy that sends no usable `X-Forwarded-For` is counted as itself.
/// - Addresses are counted by network, not one by one: IPv4 per /24 and IPv6 per /64 by default, because one
///   client easily holds a whole IPv6 /64 (and often many IPv4 addresses of one /24).
public struct AddressRules: Hashable, Sendable {
    /// Leading bits of an IPv4 address that name one client (default 24).
    public var ipv4PrefixLength = 24
    /// Leading bits of an IPv6 address that name one client (default 64).
    public var ipv6PrefixLength = 64
    /// Peers whose `X-Forwarded-For` is believed: the load balancers or reverse proxies in front of the relay.
    public var trustedProxies: [IPNetwork] = []

    /// No trusted proxies, IPv4 per /24, IPv6 per /64.
    public init() {}

    /// Whether `peer` (a TCP peer address) is a trusted proxy.
    public func isTrustedProxy(_ peer: String) -> Bool {
        guard let address = IPAddress(peer) else { return false }
        return trustedProxies.contains { $0.contains(address) }
    }

    /// The client's address for a request from `peer` with these `X-Forwarded-For` header values (in the
    /// order they came; each may hold a comma-separated list).
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        guard !forwardedFor.isEmpty, isTrustedProxy(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: " \t") }
        for hop in hops.reversed() {
            guard let address = IPAddress(hop) else { return peer }  // garbage from the nearest hop: trust none of it
            if !trustedProxies.contains(where: { $0.contains(address) }) { return address.description }
        }
        return peer
    }

    /// The key the per-address limits count `address` under: its network at the prefix length of its family
    /// (`192.0.2.0/24`). Something that does not parse as an address counts as itself.
    public func limitKey(for address: String) -> String {
        guard let parsed = IPAddress(address) else { return address }
        let length = parsed.isIPv4 ? ipv4PrefixLength : ipv6PrefixLength
        guard let network = try? IPNetwork(address: parsed, prefixLength: length) else { return address }
        return network.description
    }
}

extension StringProtocol {
    /// The text without leading and trailing characters from `set`.
    fileprivate func trimmingCharacters(in set: String) -> String {
        let scalars = Array(unicodeScalars)
        let unwanted = Set(set.unicodeScalars)
        guard let first = scalars.firstIndex(where: { !unwanted.contains($0) }),
            let last = scalars.lastIndex(where: { !unwanted.contains($0) })
        else { return "" }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[first...last])
        return String(result)
    }
}
