import CBOR
import Crypto
import Hybrid
import TestSupport
import Testing

struct TunnelServerTests {
    struct DomainVector: Decodable {
        var id: UInt16
        var host: String?
        var hashInput: String?

        enum CodingKeys: String, CodingKey {
            case id, host
            case hashInput = "hash_input"
        }
    }

    @Test func domainVectors() throws {
        for vector in try HybridVectors.decodedSection("tunnel_domains", as: DomainVector.self) {
            if let host = vector.host {
                let domain = try TunnelDomain(id: vector.id)
                #expect(domain.host == host, "\(vector.id)")
                #expect(domain.isHashed == (vector.id >= 256))
            } else {
                #expect(throws: TunnelDomainError.unassigned(vector.id)) { try TunnelDomain(id: vector.id) }
            }
            if let hashInput = vector.hashInput {
                // The documented hash input gives the same host through the documented steps.
                let digest = Array(SHA256.hash(data: try HybridVectors.hexBytes(hashInput)))
                let value = digest[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                #expect(
                    ["com", "org", "net", "info"][Int(value & 3)]
                        == vector.host?.split(separator: ".").last.map(String.init))
            }
        }
    }

    @Test func everyIDIsValidExactlyWhenChromiumAcceptsIt() {
        var disagreements: [UInt16] = []
        for id in UInt16.min...UInt16.max {
            let chromium = id < 2 || id >= 256
            let accepted = (try? TunnelDomain(id: id)) != nil
            if TunnelDomain.isValid(id) != chromium || accepted != chromium { disagreements.append(id) }
        }
        #expect(disagreements == [])
        #expect(TunnelDomain.google.host == "cable.ua5v.com")
        #expect(TunnelDomain.apple.host == "cable.auth.com")
        #expect(TunnelDomain.assignedDomainCount == 2)
    }

    @Test func hashedHostsHaveTheDocumentedShape() throws {
        var lengths: Set<Int> = []
        for id in UInt16(256)...UInt16(4096) {
            let host = try TunnelDomain(id: id).host
            let parts = host.split(separator: ".")
            #expect(parts.count == 3 && parts[0] == "cable", "\(host)")
            #expect(["com", "org", "net", "info"].contains(parts[2]))
            #expect(parts[1].allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) })
            lengths.insert(parts[1].count)
        }
        #expect(lengths.max() == 13)  // 62 bits in 5-bit groups
        #expect(lengths.min()! < 13)  // and shorter when the top groups are zero
    }

    @Test func identifiersParseEitherCaseAndWriteUpperCase() throws {
        let routing = try RoutingID(hex: "0a0B0c")
        #expect(routing.bytes == [0x0A, 0x0B, 0x0C])
        #expect(routing.hex == "0A0B0C")
        #expect(routing == (try RoutingID(bytes: [0x0A, 0x0B, 0x0C])))
        let tunnel = try TunnelID(hex: "367cbbf5f5085df4098476afe4b9b1d2")
        #expect(tunnel.hex == "367CBBF5F5085DF4098476AFE4B9B1D2")
        #expect(tunnel.description == tunnel.hex)
    }

    @Test func tunnelIDsAreKeysByTheirBytes() throws {
        let lower = try TunnelID(hex: "367cbbf5f5085df4098476afe4b9b1d2")
        let upper = try TunnelID(hex: "367CBBF5F5085DF4098476AFE4B9B1D2")
        let other = try TunnelID(hex: "367cbbf5f5085df4098476afe4b9b1d3")
        #expect(lower.hashValue == upper.hashValue)
        #expect(lower.hashValue != other.hashValue)
        let tunnels: [TunnelID: Int] = [lower: 1, other: 2]
        #expect(tunnels[upper] == 1 && tunnels[other] == 2 && tunnels.count == 2)
    }

    @Test(arguments: [
        ("", TunnelIdentifierError.wrongLength(0)), ("0a0b0", .wrongLength(5)), ("0a0b0c0", .wrongLength(7)),
        ("0a0b0g", .notHex), (" a0b0c", .notHex), ("0x0b0c", .notHex), ("\u{00E9}0b0c", .notHex),
        ("0a0b0c\n", .wrongLength(7)),
    ])
    func malformedRoutingIDHeadersAreRejected(value: String, expected: TunnelIdentifierError) {
        #expect(throws: expected) { try RoutingID(hex: value) }
    }

    @Test func identifiersCheckByteCounts() {
        #expect(throws: TunnelIdentifierError.wrongLength(2)) { try RoutingID(bytes: [1, 2]) }
        #expect(throws: TunnelIdentifierError.wrongLength(17)) { try TunnelID(bytes: [UInt8](repeating: 0, count: 17)) }
        #expect(throws: TunnelIdentifierError.wrongLength(30)) { try TunnelID(hex: String(repeating: "a", count: 30)) }
    }

    @Test func pathsRoundTrip() throws {
        let tunnel = try TunnelID(hex: "3EEF97097986413B059EAA2A30D653D4")
        let routing = try RoutingID(hex: "090A0B")
        let cases: [(TunnelPath, String)] = [
            (.new(tunnel), "/cable/new/3EEF97097986413B059EAA2A30D653D4"),
            (.connect(routing, tunnel), "/cable/connect/090A0B/3EEF97097986413B059EAA2A30D653D4"),
            (.contact([0xFB, 0xFF, 0x01]), "/cable/contact/-_8B"),
            (.contact([0xFF]), "/cable/contact/_w"),
            (.contact([0xFF, 0xEE]), "/cable/contact/_-4"),
        ]
        for (path, text) in cases {
            #expect(path.path == text)
            #expect(try TunnelPath(path: text) == path)
        }
        #expect(
            try TunnelPath(path: "/cable/connect/090a0b/3eef97097986413b059eaa2a30d653d4") == .connect(routing, tunnel))
        // A query is ignored, whatever it holds.
        #expect(try TunnelPath(path: "/cable/new/3EEF97097986413B059EAA2A30D653D4?x=1") == .new(tunnel))
        #expect(try TunnelPath(path: "/cable/new/3EEF97097986413B059EAA2A30D653D4?") == .new(tunnel))
        #expect(
            try TunnelPath(path: "/cable/connect/090A0B/3EEF97097986413B059EAA2A30D653D4?a=/b?c")
                == .connect(routing, tunnel))
        #expect(try TunnelPath(path: "/cable/contact/_-4?v=2") == .contact([0xFF, 0xEE]))
    }

    @Test(arguments: [
        ("", TunnelPathError.unknownPath), ("/", .unknownPath), ("/cable", .unknownPath), ("/cable/", .unknownPath),
        ("/cable/new", .unknownPath), ("cable/new/3EEF97097986413B059EAA2A30D653D4", .unknownPath),
        ("/cable/new/3EEF97097986413B059EAA2A30D653D4/", .unknownPath),
        ("/Cable/new/3EEF97097986413B059EAA2A30D653D4", .unknownPath),
        ("/cable/old/3EEF97097986413B059EAA2A30D653D4", .unknownPath),
        ("//cable/new/3EEF97097986413B059EAA2A30D653D4", .unknownPath),
        ("/cable/new/3EEF97097986413B059EAA2A30D653D", .invalidTunnelID),
        ("/cable/new/3EEF97097986413B059EAA2A30D653D4/?x=1", .unknownPath),
        ("/cable/new/3EEF97097986413B059EAA2A30D653D?x=1", .invalidTunnelID),
        ("/cable/new/", .invalidTunnelID),
        ("/cable/connect/090A0B", .unknownPath),
        ("/cable/connect/090A0/3EEF97097986413B059EAA2A30D653D4", .invalidRoutingID),
        ("/cable/connect/090A0B/3EEF97097986413B059EAA2A30D653DZ", .invalidTunnelID),
        ("/cable/connect//3EEF97097986413B059EAA2A30D653D4", .invalidRoutingID),
        ("/cable/contact/", .invalidContactID), ("/cable/contact/_w==", .invalidContactID),
        ("/cable/contact/_x", .invalidContactID), ("/cable/contact/a", .invalidContactID),
        ("/cable/contact/ab+/", .unknownPath), ("/cable/contact/ab+c", .invalidContactID),
    ])
    func malformedPathsAreRejected(path: String, expected: TunnelPathError) {
        #expect(throws: expected) { try TunnelPath(path: path) }
    }

    @Test func contactIDsRoundTripAtEveryLength() throws {
        var random = SeededRandom(seed: 64)
        for length in 1..<70 {
            let id = random.bytes(length)
            let path = TunnelPath.contact(id).path
            #expect(!path.contains("=") && !path.contains("+") && !path.dropFirst(15).contains("/"))
            #expect(try TunnelPath(path: path) == .contact(id))
        }
    }

    @Test func endpointsBuildFullURLs() throws {
        let tunnel = try TunnelID(hex: "367CBBF5F5085DF4098476AFE4B9B1D2")
        let routing = try RoutingID(hex: "026555")
        #expect(
            TunnelServerEndpoint.domain(.google).url(for: .connect(routing, tunnel))
                == "wss://cable.ua5v.com/cable/connect/026555/367CBBF5F5085DF4098476AFE4B9B1D2")
        let local = TunnelServerEndpoint.override(try TunnelServerBaseURL(string: "ws://127.0.0.1:8080"))
        #expect(local.url(for: .new(tunnel)) == "ws://127.0.0.1:8080/cable/new/367CBBF5F5085DF4098476AFE4B9B1D2")
        #expect(
            TunnelServerEndpoint.domain(try TunnelDomain(id: 266)).url(for: .contact([1, 2, 3]))
                == "wss://cable.wufkweyy3uaxb.com/cable/contact/AQID")
        #expect(TunnelServerProtocol.webSocketSubprotocol == "fido.cable")
        #expect(TunnelServerProtocol.routingIDHeader == "X-caBLE-Routing-ID")
    }

    @Test(arguments: [
        ("ws://127.0.0.1:8080", "ws", "127.0.0.1", UInt16(8080), "ws://127.0.0.1:8080"),
        ("WSS://Relay.Example.com/", "wss", "Relay.Example.com", nil, "wss://Relay.Example.com"),
        ("ws://[::1]:9", "ws", "[::1]", 9, "ws://[::1]:9"),
        ("wss://localhost", "wss", "localhost", nil, "wss://localhost"),
        ("ws://relay:65535", "ws", "relay", 65535, "ws://relay:65535"),
    ])
    func baseURLOverridesParse(text: String, scheme: String, host: String, port: UInt16?, normalised: String) throws {
        let base = try TunnelServerBaseURL(string: text)
        #expect(base.scheme == scheme && base.host == host && base.port == port)
        #expect(base.string == normalised)
        #expect(try TunnelServerBaseURL(string: base.string) == base)
    }

    @Test(arguments: [
        ("http://127.0.0.1:8080", TunnelServerURLError.unsupportedScheme), ("127.0.0.1:8080", .unsupportedScheme),
        ("wss:/host", .unsupportedScheme), ("", .unsupportedScheme),
        ("ws://", .invalidHost), ("ws://:8080", .invalidHost), ("ws://ho st", .invalidHost),
        ("ws://h\u{00E9}", .invalidHost), ("ws://\u{0301}host", .invalidHost),
        ("w\u{0301}s://host", .unsupportedScheme), ("\u{FF37}S://host", .unsupportedScheme),
        ("ws://[::1", .invalidHost), ("ws://[]", .invalidHost), ("ws://[::1]x", .invalidHost),
        ("ws://host:", .invalidPort), ("ws://host:0", .invalidPort), ("ws://host:65536", .invalidPort),
        ("ws://host:80a", .invalidPort), ("ws://host:-1", .invalidPort), ("ws://host:000080", .invalidPort),
        ("ws://host/path", .unexpectedComponent), ("ws://host?x=1", .unexpectedComponent),
        ("ws://host#f", .unexpectedComponent), ("ws://user@host", .unexpectedComponent),
        ("ws://host//", .unexpectedComponent),
    ])
    func badBaseURLOverridesAreRejected(text: String, expected: TunnelServerURLError) {
        #expect(throws: expected) { try TunnelServerBaseURL(string: text) }
    }
}
