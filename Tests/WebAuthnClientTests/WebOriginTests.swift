import TestSupport
import Testing
import WebAuthnClient

/// Origins read from URLs: the tuple, the serialization, opaque origins, and URLs that do not parse.
struct WebOriginTests {
    @Test(arguments: [
        ("https://login.example.com:1337", "https://login.example.com:1337"),
        ("https://login.example.co.uk:8443/path?query#fragment", "https://login.example.co.uk:8443"),
        ("HTTPS://Login.Example.COM:443/", "https://login.example.com"),
        ("http://localhost:80", "http://localhost"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("https://user:secret@example.com:0443", "https://example.com"),
        ("https://example.com:", "https://example.com"),
        ("  https://example.com  ", "https://example.com"),
        ("wss://relay.example", "wss://relay.example"),
        ("https://127.0.0.1:8443", "https://127.0.0.1:8443"),
        ("https://0x7f.1", "https://127.0.0.1"),
        ("https://2130706433", "https://127.0.0.1"),
        ("https://0177.0.0.1.", "https://127.0.0.1"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        ("https://[2001:DB8::1]", "https://[2001:db8::1]"),
        ("blob:https://example.com/6d1b9e8a", "https://example.com"),
        ("data:text/plain,hello", "null"),
        ("file:///etc/passwd", "null"),
        ("about:blank", "null"),
        ("javascript:alert(1)", "null"),
        ("blob:data:text/plain,x", "null"),
    ])
    func readsTheOrigin(url: String, serialized: String) throws {
        #expect(try WebOrigin(url: url).description == serialized)
    }

    @Test(arguments: [
        "", "   ", "example.com", "not a url", "1https://example.com", "https:example.com", "https:/example.com",
        "https://", "https:///path", "https://exa mple.com", "https://exa\tmple.com", "https://example.com:99999",
        "https://example.com:8o", "https://example.com:-1", "https://[::1", "https://[::1]x", "https://[example]",
        "https://bücher.de", "https://ex%41mple.com", "https://exa<mple.com", "https://exa|mple.com",
        "https://exa\u{7}mple.com", "https://1.2.3.4.5", "https://256.0.0.1", "https://example.123",
        "https://0x100000000", "https://08.0.0.1", "https://user@",
        "https://example.com:\(String(repeating: "9", count: 400))",
    ])
    func refusesURLsThatDoNotParse(url: String) {
        #expect(throws: WebOriginError.self, "\(url.debugDescription)") { try WebOrigin(url: url) }
    }

    @Test func comparesOrigins() throws {
        let a = try WebOrigin(url: "https://example.com/a")
        #expect(a.isSameOrigin(as: try WebOrigin(url: "https://EXAMPLE.com:443/b")))
        #expect(!a.isSameOrigin(as: try WebOrigin(url: "https://example.com:8443")))
        #expect(!a.isSameOrigin(as: try WebOrigin(url: "http://example.com")))
        #expect(!a.isSameOrigin(as: try WebOrigin(url: "https://www.example.com")))
        let opaque = try WebOrigin(url: "data:,x")
        #expect(!opaque.isSameOrigin(as: opaque))
        #expect(a.host == .domain("example.com"))
        #expect(opaque.host == nil)
    }

    @Test func survivesSeededGarbage() {
        var generator = SeededRandom(seed: 7)
        let pieces = [
            "https", "http", ":", "//", "/", "[", "]", "@", ".", "0x", "1", "9", "a", "é", "%", "?", "#", " ", "\u{0}",
        ]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...14, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }
            .joined()
            if let origin = try? WebOrigin(url: text) {
                // Whatever parses serializes to something that parses to the same origin.
                #expect((try? WebOrigin(url: origin.description)) == origin || origin.description == "null")
            }
        }
    }
}
