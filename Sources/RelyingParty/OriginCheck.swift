import Foundation

/// Why a browser would refuse to run a ceremony for this RP ID from this origin.
public struct OriginCheckError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String

    init(_ description: String) { self.description = description }
}

/// The checks a browser makes before it asks any authenticator (WebAuthn L3 §5.1.3 steps 7–8, §5.1.4.1
/// steps 8–9): the origin must be a secure context, and the RP ID must be its host or a registrable suffix of it.
public enum OriginCheck {
    /// Returns the checked origin, normalised to `scheme://host[:port]`, or throws saying what is wrong.
    ///
    /// Without a public suffix list, an RP ID of a single label ("com") is refused unless it is `localhost`,
    /// and IP addresses must match the host exactly.
    public static func validate(relyingPartyID rpID: String, origin: String) throws(OriginCheckError) -> String {
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { throw OriginCheckError("origin \(origin) is not a URL with a host") }
        guard components.path.isEmpty || components.path == "/", components.query == nil, components.user == nil
        else { throw OriginCheckError("origin \(origin) must be scheme://host[:port] with no path") }
        let localhost = host == "localhost" || host.hasSuffix(".localhost") || host == "127.0.0.1" || host == "[::1]"
        guard scheme == "https" || (scheme == "http" && localhost) else {
            throw OriginCheckError(
                "origin \(origin) is not a secure context: WebAuthn needs https (http only for localhost)")
        }
        let id = rpID.lowercased()
        guard !id.isEmpty, !id.hasPrefix("."), !id.hasSuffix("."), !id.contains("..") else {
            throw OriginCheckError("RP ID \(rpID) is not a domain")
        }
        let isIP = id.allSatisfy { $0.isNumber || $0 == "." } || id.contains(":")
        if isIP || host.first == "[" || host.allSatisfy({ $0.isNumber || $0 == "." }) {
            guard id == host else {
                throw OriginCheckError("RP ID \(rpID) does not match the IP address of origin \(origin)")
            }
        } else {
            guard id == host || host.hasSuffix("." + id) else {
                throw OriginCheckError(
                    "RP ID \(rpID) is not \(host) or a registrable suffix of it: a browser refuses this before "
                        + "asking any authenticator")
            }
            guard id.contains(".") || id == "localhost" else {
                throw OriginCheckError("RP ID \(rpID) is a top-level domain, not a registrable domain")
            }
        }
        var normalised = "\(scheme)://\(host)"
        if let port = components.port, !(scheme == "https" && port == 443), !(scheme == "http" && port == 80) {
            normalised += ":\(port)"
        }
        return normalised
    }
}
