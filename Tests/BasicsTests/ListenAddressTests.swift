import Basics
import Testing

/// `HOST:PORT` as `--listen` and `--udp` take it.
struct ListenAddressTests {
    @Test(
        arguments: [
            ("127.0.0.1:8787", "127.0.0.1", 8787), ("localhost:0", "localhost", 0), ("[::1]:443", "::1", 443),
            ("0.0.0.0:65535", "0.0.0.0", 65535), ("::1:80", "::1", 80),
        ] as [(String, String, Int)])
    func addressesRead(text: String, host: String, port: Int) throws {
        let address = try #require(ListenAddress(text))
        #expect(address.host == host)
        #expect(address.port == port)
    }

    @Test(arguments: [
        "127.0.0.1", ":8787", "[]:1", "host:", "host:65536", "host:-1", "host:+80", "host: 80", "host:80 ", "host:٣",
        "host:000000080", "",
    ])
    func otherTextIsRefused(text: String) {
        #expect(ListenAddress(text) == nil)
    }

    @Test func anIPv6HostIsWrittenInBrackets() throws {
        #expect(try #require(ListenAddress("[::1]:443")).description == "[::1]:443")
        #expect(try #require(ListenAddress("localhost:80")).description == "localhost:80")
    }
}
