/// A `HOST:PORT` given on a command line (`--listen`, `--udp`): the host as written, without the brackets of an IPv6
/// literal (`[::1]:8080`), and a port from 0 (any free port) to 65535.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// Nil for text without a colon, with an empty host, or with a port that is not a number from 0 to 65535.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let portText = text[text.index(after: colon)...]
        guard !host.isEmpty, !portText.isEmpty, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            portText.utf8.count <= 5, let port = Int(portText), (0...65535).contains(port)
        else { return nil }
        (self.host, self.port) = (host, port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
