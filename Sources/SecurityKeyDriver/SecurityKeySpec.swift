/// Which security key to use, as `--security-key` names it: `hidraw:/dev/hidrawN`, `udp:HOST:PORT` or `auto`.
public enum SecurityKeySpec: Hashable, Sendable, CustomStringConvertible {
    /// A hidraw node: a USB key, or `passkey serve --uhid`.
    case hidraw(path: String)
    /// A CTAPHID device answering UDP datagrams, such as `passkey serve --udp`.
    case udp(host: String, port: Int)
    /// The one FIDO device among the hidraw nodes.
    case auto

    /// Reads `hidraw:/dev/hidrawN`, `udp:HOST:PORT` (an IPv6 host in brackets: `udp:[::1]:8111`) or `auto`.
    /// - Throws: ``SecurityKeyError/invalidSpec(_:)``.
    public init(parsing text: String) throws(SecurityKeyError) {
        if text == "auto" {
            self = .auto
        } else if text.hasPrefix("hidraw:") {
            let path = String(text.dropFirst("hidraw:".count))
            guard path.hasPrefix("/"), path.count > 1 else { throw .invalidSpec(text) }
            self = .hidraw(path: path)
        } else if text.hasPrefix("udp:") {
            let address = text.dropFirst("udp:".count)
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
                (1...65535).contains(port)
            else { throw .invalidSpec(text) }
            var host = address[..<colon]
            if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            guard !host.isEmpty, !host.contains(where: { $0 == "[" || $0 == "]" || $0 == " " }) else {
                throw .invalidSpec(text)
            }
            self = .udp(host: String(host), port: port)
        } else {
            throw .invalidSpec(text)
        }
    }

    /// The text form ``init(parsing:)`` reads.
    public var description: String {
        switch self {
        case .hidraw(let path): "hidraw:\(path)"
        case .udp(let host, let port): host.contains(":") ? "udp:[\(host)]:\(port)" : "udp:\(host):\(port)"
        case .auto: "auto"
        }
    }
}
