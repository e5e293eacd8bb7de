/// An origin (HTML §7.1.1 "Origins", URL Standard §4.7 "Origin"): the scheme, host and port of a URL whose scheme
/// has them, or an opaque origin for every other URL (`data:`, `about:`, `file:`, …).
///
/// `init(url:)` reads the origin of a URL the way the URL standard's basic URL parser would, for the URLs a
/// person types or a relying party lists: `scheme://[user@]host[:port][/path][?query][#fragment]`. It is stricter
/// in a few places, each an error that says so rather than a different origin: a special scheme must be followed
/// by `//` (the parser would also take `https:example.com` and backslashes), tabs and line breaks inside are
/// refused (the parser would drop them), and a domain must be ASCII, with internationalised labels in their `xn--`
/// form, and not percent-encoded (the parser would run IDNA over it).
public enum WebOrigin: Hashable, Sendable, CustomStringConvertible {
    /// A tuple origin; `port` is nil when it is the scheme's default.
    case tuple(scheme: String, host: WebHost, port: Int?)
    /// An opaque origin, and the scheme of the URL it came from.
    case opaque(scheme: String)

    /// The schemes whose URLs have hosts, with their default ports (URL Standard §4.1 "special scheme"); `file`
    /// has no port and an opaque origin.
    static let defaultPorts: [String: Int] = ["http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21]

    /// The origin of `url`.
    public init(url: String) throws(WebOriginError) {
        var text = Substring(url)
        // The basic URL parser strips leading and trailing C0 controls and spaces.
        while let first = text.unicodeScalars.first, first.value <= 0x20 { text = text.dropFirst() }
        while let last = text.unicodeScalars.last, last.value <= 0x20 { text = text.dropLast() }
        guard !text.isEmpty else { throw WebOriginError("it is empty") }
        guard !text.unicodeScalars.contains(where: { $0 == "\t" || $0 == "\n" || $0 == "\r" }) else {
            throw WebOriginError("it has a tab or line break inside")
        }
        guard let colon = text.firstIndex(of: ":"), Self.isScheme(text[..<colon]) else {
            throw WebOriginError("it has no scheme (such as https:)")
        }
        let scheme = asciiLowercased(text[..<colon])
        let rest = text[text.index(after: colon)...]
        if scheme == "blob" {
            // URL Standard §4.7: a blob: URL has the origin of the URL it wraps, if that is http(s), else opaque.
            guard let inner = try? WebOrigin(url: String(rest)), case .tuple(let innerScheme, _, _) = inner,
                innerScheme == "http" || innerScheme == "https"
            else {
                self = .opaque(scheme: scheme)
                return
            }
            self = inner
            return
        }
        guard let defaultPort = Self.defaultPorts[scheme] else {
            // `file:` origins are opaque ("When in doubt, return a new opaque origin"), and so is every
            // non-special scheme's.
            self = .opaque(scheme: scheme)
            return
        }
        guard rest.hasPrefix("//") else {
            throw WebOriginError("\(scheme): must be followed by //")
        }
        let afterSlashes = rest.dropFirst(2)
        let authority = afterSlashes.prefix { !"/?#\\".contains($0) }
        // Credentials are not part of the origin; the host follows the last @.
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        let hostText: Substring
        let portText: Substring?
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else {
                throw WebOriginError("its IPv6 address has no closing ]")
            }
            hostText = hostAndPort[...close]
            let after = hostAndPort[hostAndPort.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw WebOriginError("something follows its IPv6 address other than a port")
            }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let portColon = hostAndPort.firstIndex(of: ":") {
            hostText = hostAndPort[..<portColon]
            portText = hostAndPort[hostAndPort.index(after: portColon)...]
        } else {
            hostText = hostAndPort
            portText = nil
        }
        let host = try WebHost(parsing: hostText)
        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw WebOriginError("its port \(String(portText.prefix(20)).debugDescription) is not a number")
            }
            let digits = portText.drop { $0 == "0" }
            guard digits.count <= 5, let value = Int(digits.isEmpty ? "0" : digits), value <= 65_535 else {
                throw WebOriginError("its port \(portText.prefix(20)) is over 65535")
            }
            port = value == defaultPort ? nil : value
        }
        self = .tuple(scheme: scheme, host: host, port: port)
    }

    /// The ASCII serialization (HTML §7.1.1 "serialization of an origin"): `scheme://host[:port]`, or `null`.
    public var description: String {
        switch self {
        case .tuple(let scheme, let host, let port): "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
        case .opaque: "null"
        }
    }

    /// The scheme of the URL the origin came from.
    public var scheme: String {
        switch self {
        case .tuple(let scheme, _, _), .opaque(let scheme): scheme
        }
    }

    /// The host, which is also the effective domain here: nothing sets `document.domain`. Nil when opaque.
    public var host: WebHost? {
        if case .tuple(_, let host, _) = self { return host }
        return nil
    }

    /// HTML "same origin": two tuple origins with equal scheme, host and port. Opaque origins made from URL text
    /// are each new, so they are never the same origin as anything here.
    public func isSameOrigin(as other: WebOrigin) -> Bool {
        guard case .tuple = self, case .tuple = other else { return false }
        return self == other
    }

    /// URL Standard: an ASCII letter, then letters, digits, `+`, `-` and `.`.
    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.utf8.first, first.isASCIILetter else { return false }
        return text.utf8.allSatisfy {
            $0.isASCIILetter || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "+")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
    }
}

/// A URL's host (URL Standard §3.1): a domain, or an IP address.
public enum WebHost: Hashable, Sendable, CustomStringConvertible {
    /// A domain, in lower-case ASCII as the URL had it (not yet checked against DNS's rules: see `DomainName`).
    case domain(String)
    /// An IPv4 address, as the URL standard's IPv4 parser reads it (`127.1` and `0x7f.0.0.1` are `127.0.0.1`).
    case ipv4(UInt32)
    /// An IPv6 address, as written between the brackets, in lower case.
    case ipv6(String)

    /// Parses a host as the URL standard's host parser does for special schemes, within the limits `WebOrigin`
    /// describes.
    public init(parsing text: Substring) throws(WebOriginError) {
        guard !text.isEmpty else { throw WebOriginError("it has no host") }
        if text.hasPrefix("[") {
            guard text.hasSuffix("]"), text.count > 2 else { throw WebOriginError("its IPv6 address is not closed") }
            let inside = text.dropFirst().dropLast()
            let allowed = inside.utf8.allSatisfy {
                $0.isASCIIHexDigit || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
            }
            guard allowed, inside.contains(":") else {
                throw WebOriginError("[\(inside.prefix(40))] is not an IPv6 address")
            }
            self = .ipv6(asciiLowercased(inside))
            return
        }
        guard !text.contains("%") else {
            throw WebOriginError("its host is percent-encoded: give it as plain text")
        }
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw WebOriginError("its host is not ASCII: give internationalised labels in their xn-- (Punycode) form")
        }
        // URL Standard §3.2 "forbidden domain code point".
        if let bad = text.unicodeScalars.first(where: {
            $0.value < 0x20 || $0.value == 0x7F || " #/:<>?@[\\]^|%".unicodeScalars.contains($0)
        }) {
            let shown = bad.value < 0x20 || bad.value == 0x7F ? "a control character" : "'\(bad)'"
            throw WebOriginError("its host has \(shown), which no domain may hold")
        }
        let lowered = asciiLowercased(text)
        if let address = try Self.ipv4IfEndsInANumber(lowered) {
            self = .ipv4(address)
        } else {
            self = .domain(lowered)
        }
    }

    public var description: String {
        switch self {
        case .domain(let name): name
        case .ipv4(let address):
            [24, 16, 8, 0].map { String((address >> $0) & 0xFF) }.joined(separator: ".")
        case .ipv6(let text): "[\(text)]"
        }
    }

    /// Whether the host is an IP address rather than a domain.
    public var isIPAddress: Bool {
        if case .domain = self { return false }
        return true
    }

    /// URL Standard §3.5 "ends in a number checker" and "IPv4 parser": a host whose last label is a number is an
    /// IPv4 address or no host at all.
    static func ipv4IfEndsInANumber(_ host: String) throws(WebOriginError) -> UInt32? {
        var parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.last == "" && parts.count > 1 { parts.removeLast() }
        guard let last = parts.last else { return nil }
        let isDecimal = !last.isEmpty && last.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        let isHexadecimal = last.hasPrefix("0x") && last.dropFirst(2).utf8.allSatisfy(\.isASCIIHexDigit)
        let isNumber = isDecimal || isHexadecimal
        guard isNumber else { return nil }
        let failure = WebOriginError("its host \(host.prefix(60)) ends in a number but is not an IPv4 address")
        guard parts.count <= 4 else { throw failure }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = ipv4Number(part) else { throw failure }
            numbers.append(number)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { throw failure }
        let lastLimit = UInt64(1) << (8 * UInt64(5 - numbers.count))
        guard numbers.last! < lastLimit else { throw failure }
        var address = numbers.last!
        for (index, number) in numbers.dropLast().enumerated() {
            address += number << (8 * UInt64(3 - index))
        }
        return UInt32(address)
    }

    /// URL Standard "IPv4 number parser": decimal, `0x` hexadecimal, or octal with a leading 0; nil if it is none.
    private static func ipv4Number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = part
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") {
            digits = digits.dropFirst(2)
            radix = 16
        } else if digits.count > 1, digits.hasPrefix("0") {
            digits = digits.dropFirst()
            radix = 8
        }
        var value: UInt64 = 0
        for byte in digits.utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a")) + 10
            default: return nil
            }
            guard digit < radix else { return nil }
            // Anything over 2^32 fails later anyway; stop before UInt64 overflows.
            value = min(value * radix + digit, UInt64(1) << 40)
        }
        return value
    }
}

/// Why a URL has no origin this client can read: the URL does not parse.
public struct WebOriginError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, as the end of "the URL … is not a URL: …".
    public var reason: String

    init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}

extension UInt8 {
    var isASCIILetter: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }

    var isASCIIHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    var asciiLowercased: UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self + 0x20 : self }
}

/// ASCII text with its upper-case letters lowered.
func asciiLowercased(_ text: some StringProtocol) -> String {
    String(decoding: text.utf8.map(\.asciiLowercased), as: UTF8.self)
}
