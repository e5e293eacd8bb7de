import Foundation
import PublicSuffix
import Testing
import WebAuthnClient

/// The system's list, as Debian's `publicsuffix` package installs it (Tools/lib/setup.sh installs the package).
enum SystemList {
    static let path = "/usr/share/publicsuffix/public_suffix_list.dat"
    static let list: PublicSuffixList? = {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? PublicSuffixList(bytes: data)
    }()
}

typealias Rule = RelyingPartyIDVerdict.Rule

/// The RP ID rules against the examples of the specifications that state them, over the real list.
struct RelyingPartyIDCheckTests {
    /// (origin, RP ID or nil for the default, the rule that decides, the RP ID the verdict reports).
    static let table: [(String, String?, Rule, String?)] = [
        // WebAuthn L3 §4 "RP ID": "given a Relying Party whose origin is https://login.example.com:1337, then the
        // following RP IDs are valid: login.example.com (default) and example.com, but not m.login.example.com and
        // not com", and "Another example of a valid origin is http://localhost:8000".
        ("https://login.example.com:1337", nil, .defaultRPID, "login.example.com"),
        ("https://login.example.com:1337", "login.example.com", .equalsHost, "login.example.com"),
        ("https://login.example.com:1337", "example.com", .registrableSuffix, "example.com"),
        ("https://login.example.com:1337", "m.login.example.com", .notASuffix, "m.login.example.com"),
        ("https://login.example.com:1337", "com", .rpIDIsPublicSuffix, "com"),
        ("http://localhost:8000", nil, .defaultRPID, "localhost"),
        ("http://localhost:8000", "localhost", .equalsHost, "localhost"),
        // HTML §7.1.1.2's table for "is a registrable domain suffix of or is equal to" (the IP rows are refused
        // earlier: WebAuthn needs a domain).
        ("https://example.com", "example.com", .equalsHost, "example.com"),
        ("https://www.example.com", "example.com", .registrableSuffix, "example.com"),
        ("https://example.com", "com", .rpIDIsPublicSuffix, "com"),
        ("https://example", "example", .equalsHost, "example"),
        (
            "https://example.compute.amazonaws.com", "compute.amazonaws.com", .insidePublicSuffix,
            "compute.amazonaws.com"
        ),
        (
            "https://www.example.compute.amazonaws.com", "example.compute.amazonaws.com", .rpIDIsPublicSuffix,
            "example.compute.amazonaws.com"
        ),
        ("https://www.example.compute.amazonaws.com", "amazonaws.com", .insidePublicSuffix, "amazonaws.com"),
        ("https://test.amazonaws.com", "amazonaws.com", .registrableSuffix, "amazonaws.com"),
        ("https://example.com", "example.com.", .invalidRPID, "example.com."),  // "Trailing dot is significant"
        ("https://example.com.", "example.com", .invalidOriginHost, nil),
        ("https://0.0.0.0", "0.0.0.0", .ipAddressOrigin, nil),
        // The brief's own: a port, a two-label public suffix.
        ("https://login.example.co.uk:8443", nil, .defaultRPID, "login.example.co.uk"),
        ("https://login.example.co.uk:8443", "example.co.uk", .registrableSuffix, "example.co.uk"),
        ("https://login.example.co.uk:8443", "co.uk", .rpIDIsPublicSuffix, "co.uk"),
        ("https://login.example.co.uk:8443", "uk", .rpIDIsPublicSuffix, "uk"),
        ("https://example.co.uk", "example.co.uk", .equalsHost, "example.co.uk"),
        ("https://login.example.co.uk", "ample.co.uk", .notASuffix, "ample.co.uk"),
        ("https://login.example.co.uk", "example.com", .notASuffix, "example.com"),
        // Private section entries count, as in browsers.
        ("https://whatwg.github.io", "whatwg.github.io", .equalsHost, "whatwg.github.io"),
        ("https://www.whatwg.github.io", "whatwg.github.io", .registrableSuffix, "whatwg.github.io"),
        ("https://whatwg.github.io", "github.io", .rpIDIsPublicSuffix, "github.io"),
        ("https://github.io", "github.io", .equalsHost, "github.io"),
        // Wildcards and exceptions: *.kawasaki.jp and !city.kawasaki.jp.
        ("https://www.foo.kawasaki.jp", "foo.kawasaki.jp", .rpIDIsPublicSuffix, "foo.kawasaki.jp"),
        ("https://www.foo.kawasaki.jp", "kawasaki.jp", .insidePublicSuffix, "kawasaki.jp"),
        ("https://www.city.kawasaki.jp", "city.kawasaki.jp", .registrableSuffix, "city.kawasaki.jp"),
        // kawasaki.jp is registrable but is the public suffix of www.city.kawasaki.jp: HTML step 4.4's assertion.
        ("https://www.city.kawasaki.jp", "kawasaki.jp", .insidePublicSuffix, "kawasaki.jp"),
        // Secure contexts: http on localhost and its subdomains only.
        ("http://app.localhost:3000", nil, .defaultRPID, "app.localhost"),
        ("http://app.localhost:3000", "app.localhost", .equalsHost, "app.localhost"),
        ("http://app.localhost", "localhost", .rpIDIsPublicSuffix, "localhost"),
        ("http://example.com", nil, .httpNotLocalhost, nil),
        ("http://localhost.example.com", nil, .httpNotLocalhost, nil),
        ("http://127.0.0.1:8080", nil, .ipAddressOrigin, nil),
        ("ws://localhost", nil, .insecureScheme, nil),
        ("ftp://example.com", nil, .insecureScheme, nil),
        ("wss://example.com", "example.com", .insecureScheme, nil),
        // Opaque origins.
        ("data:text/html,<p>hi", nil, .opaqueOrigin, nil),
        ("file:///home/user/page.html", "localhost", .opaqueOrigin, nil),
        ("about:blank", nil, .opaqueOrigin, nil),
        ("blob:https://example.com/1f0e", "example.com", .equalsHost, "example.com"),
        // IP addresses, as the origin's host or as the RP ID.
        ("https://127.0.0.1", nil, .ipAddressOrigin, nil),
        ("https://[::1]", "[::1]", .ipAddressOrigin, nil),
        ("https://example.com", "127.0.0.1", .ipAddressRPID, "127.0.0.1"),
        ("https://example.com", "0x7f.1", .ipAddressRPID, "127.0.0.1"),
        ("https://example.com", "[::1]", .ipAddressRPID, "[::1]"),
        ("https://1.example.com", "1", .ipAddressRPID, "0.0.0.1"),
        // RP IDs that are no valid domain.
        ("https://example.com", "", .invalidRPID, ""),
        ("https://example.com", ".example.com", .invalidRPID, ".example.com"),
        ("https://example.com", "exa mple.com", .invalidRPID, "exa mple.com"),
        ("https://example.com", "bücher.de", .invalidRPID, "bücher.de"),
        ("https://example.com", "*.example.com", .invalidRPID, "*.example.com"),
        ("https://example.com", "example.com:443", .invalidRPID, "example.com:443"),
        ("https://example.com", "https://example.com", .invalidRPID, "https://example.com"),
        ("https://example.com", "1.2.3.4.5", .invalidRPID, "1.2.3.4.5"),
        ("https://exa_mple.com", nil, .invalidOriginHost, nil),
        ("https://\(String(repeating: "a.", count: 200))com", nil, .invalidOriginHost, nil),
        // Case does not matter; Punycode labels are hosts like any other.
        ("https://Login.EXAMPLE.com", "Example.COM", .registrableSuffix, "example.com"),
        ("https://xn--bcher-kva.de", "xn--bcher-kva.de", .equalsHost, "xn--bcher-kva.de"),
        ("https://shop.xn--bcher-kva.de", "xn--bcher-kva.de", .registrableSuffix, "xn--bcher-kva.de"),
        ("https://xn--85x722f.xn--55qx5d.cn", "xn--55qx5d.cn", .rpIDIsPublicSuffix, "xn--55qx5d.cn"),
    ]

    static let valid: Set<Rule> = [.defaultRPID, .equalsHost, .registrableSuffix, .relatedOrigin]

    @Test(arguments: table)
    func decides(origin: String, rpID: String?, rule: Rule, reported: String?) throws {
        let list = try #require(SystemList.list)
        let verdict = RelyingPartyIDCheck.evaluate(origin: try WebOrigin(url: origin), rpID: rpID, list: list)
        #expect(verdict.rule == rule, "\(origin) \(rpID ?? "(default)"): \(verdict.reason)")
        #expect(verdict.valid == Self.valid.contains(rule))
        #expect(verdict.rpID == reported)
        #expect(!verdict.reason.isEmpty)
    }

    @Test func reasonsNameTheRuleAndTheValues() throws {
        let list = try #require(SystemList.list)
        func reason(_ origin: String, _ rpID: String?) throws -> String {
            RelyingPartyIDCheck.evaluate(origin: try WebOrigin(url: origin), rpID: rpID, list: list).reason
        }
        #expect(try reason("https://login.example.co.uk:8443", "example.co.uk").contains("registrable domain suffix"))
        #expect(try reason("https://login.example.co.uk:8443", "co.uk").hasPrefix("the RP ID co.uk is a public suffix"))
        #expect(try reason("http://example.com", nil).hasPrefix("http is allowed only on localhost"))
        #expect(try reason("https://www.foo.kawasaki.jp", "kawasaki.jp").contains("*.kawasaki.jp"))
        #expect(try reason("https://127.0.0.1", nil).contains("IP address"))
        #expect(try reason("data:,x", nil).contains("opaque"))
        let verdict = RelyingPartyIDCheck.evaluate(
            origin: try WebOrigin(url: "https://login.example.com:1337"), rpID: "example.com", list: list)
        #expect(verdict.origin == "https://login.example.com:1337")
        #expect(verdict.description.hasPrefix("valid: "))
    }
}
