import Hybrid
import NIOCore
import NIOEmbedded
import Relay
import TestSupport
import Testing

@testable import RelayIO

/// The HTTP stage of a connection in `EmbeddedChannel`, from raw bytes through the pipeline `RelayServer` builds:
/// every refusal with its status, headers and metric, malformed requests, the upgrade answer, the request timer.
struct RelayHTTPHandlerTests {
    /// One refused request: `request` gets the ID of a tunnel already registered.
    struct RefusalCase: Sendable, CustomTestStringConvertible {
        var name: String
        var request: @Sendable (String) -> String
        var status: Int
        var reason: String
        var testDescription: String { name }

        init(_ name: String, _ status: Int, _ reason: String, _ request: @escaping @Sendable (String) -> String) {
            (self.name, self.status, self.reason, self.request) = (name, status, reason, request)
        }
    }

    static let refusals: [RefusalCase] = [
        RefusalCase("unknown path", 404, "unknownPath") { _ in WebSocketUpgrade.request(path: "/cable/other/00") },
        RefusalCase("bad hex", 400, "badHex") { _ in WebSocketUpgrade.request(path: "/cable/new/XYZ") },
        RefusalCase("duplicate", 409, "duplicateTunnel") { WebSocketUpgrade.request(path: "/cable/new/\($0)") },
        RefusalCase("unknown tunnel", 404, "unknownTunnel") { _ in
            WebSocketUpgrade.request(path: "/cable/connect/0A0B0C/\(Relay.randomTunnelID())")
        },
        RefusalCase("another instance's routing ID", 404, "unknownRoutingID") {
            WebSocketUpgrade.request(path: "/cable/connect/0A0B0D/\($0)")
        },
        RefusalCase("a listener for another instance's contacts", 404, "unknownRoutingID") { _ in
            WebSocketUpgrade.request(path: "/cable/listen/0A0B0D")
        },
        RefusalCase("a listener routing ID that is not hex", 400, "badHex") { _ in
            WebSocketUpgrade.request(path: "/cable/listen/0A0B0")
        },
        RefusalCase("a listener without upgrade", 426, "upgradeRequired") { _ in
            "GET /cable/listen/0A0B0C HTTP/1.1\r\nHost: x\r\n\r\n"
        },
        RefusalCase("no subprotocol", 400, "missingSubprotocol") {
            WebSocketUpgrade.request(path: "/cable/connect/0A0B0C/\($0)", protocols: nil)
        },
        RefusalCase("wrong subprotocol", 400, "missingSubprotocol") {
            WebSocketUpgrade.request(path: "/cable/new/\($0)", protocols: "chat, superchat")
        },
        RefusalCase("POST", 405, "methodNotAllowed") {
            WebSocketUpgrade.request(path: "/cable/new/\($0)", method: "POST")
        },
        RefusalCase("bad version", 426, "unsupportedWebSocketVersion") {
            WebSocketUpgrade.request(path: "/cable/new/\($0)", version: "8")
        },
        RefusalCase("no version", 426, "unsupportedWebSocketVersion") {
            WebSocketUpgrade.request(path: "/cable/new/\($0)", version: nil)
        },
        RefusalCase("no key", 400, "badWebSocketKey") { WebSocketUpgrade.request(path: "/cable/new/\($0)", key: nil) },
        RefusalCase("short key", 400, "badWebSocketKey") {
            WebSocketUpgrade.request(path: "/cable/new/\($0)", key: "c2hvcnQ=")
        },
        RefusalCase("no upgrade", 426, "upgradeRequired") { "GET /cable/new/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" },
        RefusalCase("plain GET", 404, "unknownPath") { _ in "GET / HTTP/1.1\r\nHost: x\r\n\r\n" },
        RefusalCase("DELETE", 405, "methodNotAllowed") { _ in
            "DELETE /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        },
    ]

    @Test(arguments: refusals)
    func refusesWithStatus(_ refusal: RefusalCase) throws {
        let relay = EmbeddedRelay()
        let tunnelID = Relay.randomTunnelID()
        let (holder, _) = try relay.new(tunnelID)  // for the duplicate
        let client = try #require(try relay.connect(from: "198.51.100.7"))
        try client.send(refusal.request(tunnelID))
        let response = try #require(try client.response())
        #expect(response.status == refusal.status)
        #expect(response.header("Connection") == "close")
        #expect(response.header("Sec-WebSocket-Accept") == nil)
        #expect(response.body == "\(refusal.status) \(refusal.reason)\n")
        #expect(client.isClosed)
        #expect(relay.metric("relay_rejections_total{reason=\"\(refusal.reason)\"}") == 1)
        if refusal.reason == "unsupportedWebSocketVersion" {
            #expect(response.header("Sec-WebSocket-Version") == "13")
        }
        if refusal.reason == "methodNotAllowed" { #expect(response.header("Allow") == "GET") }
        if refusal.reason == "upgradeRequired" { #expect(response.header("Upgrade") == "websocket") }
        // The registered tunnel is untouched.
        try holder.send(RawFrame.client(opcode: 0x9, [5]))
        #expect(try holder.frames() == [RawFrame(fin: true, opcode: 0xA, masked: false, payload: [5])])
        #expect(relay.metric("relay_tunnels_open") == 1)
    }

    @Test func theUpgradeAnswerNamesTheSubprotocolTheAcceptKeyAndTheRoutingID() throws {
        let relay = EmbeddedRelay { $0.routingID = try? RoutingID(hex: "C3D4E5") }
        let side = try #require(try relay.connect())
        try side.send(WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"))
        let response = try #require(try side.response())
        #expect(response.status == 101)
        #expect(response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")  // RFC 6455 §1.3
        #expect(response.header("Sec-WebSocket-Protocol") == "fido.cable")
        let routingID = try #require(response.header("X-caBLE-Routing-ID"))
        #expect(routingID == "C3D4E5")
        #expect(!side.isClosed)
        #expect(relay.metric("relay_tunnels_opened_total") == 1)
    }

    /// `/cable/listen` (registration) goes to any instance; `/cable/listen/{ROUTING_ID}` only to the one whose
    /// routing ID it names (the embedded relay's is 0A0B0C), or to one whose contact file keeps contacts issued
    /// under it (a random routing ID changes at every start). A file written before routing IDs were kept cannot
    /// tell: a relay with a random routing ID then takes any (issue 23, attack 11: it took any, always).
    static let listenerPaths: [(configured: Bool, kept: String??, path: String, status: Int)] = [
        (true, .none, "/cable/listen", 101), (true, .none, "/cable/listen/0A0B0C", 101),
        (true, .none, "/cable/listen/0a0b0c", 101), (true, .none, "/cable/listen/0A0B0D", 404),
        (false, .none, "/cable/listen/0A0B0D", 404), (false, .none, "/cable/listen", 101),
        (false, "0A0B0D", "/cable/listen/0A0B0D", 101), (false, "0A0B0D", "/cable/listen/0A0B0E", 404),
        (false, .some(nil), "/cable/listen/0A0B0E", 101), (true, .some(nil), "/cable/listen/0A0B0E", 404),
    ]

    @Test(arguments: listenerPaths)
    func listenersAreTakenForThisInstancesContacts(configured: Bool, kept: String??, path: String, status: Int)
        throws
    {
        let records = try kept.map { routingID in
            [
                ContactRecord(
                    hash: .init(repeating: 1, count: 32), sealedVerifier: [2], created: 0, lastUsed: 0,
                    routingID: try routingID.map { try RoutingID(hex: $0) })
            ]
        }
        let relay = EmbeddedRelay(routingIDIsConfigured: configured, contacts: records ?? [])
        let side = try #require(try relay.connect())
        try side.send(WebSocketUpgrade.request(path: path))
        let response = try #require(try side.response())
        #expect(response.status == status)
        guard status == 101 else {
            #expect(response.body == "404 unknownRoutingID\n")
            return
        }
        #expect(response.header("X-caBLE-Routing-ID") == nil)
        let frame = try #require(try side.frames().first)
        guard case .challenge = try ListenerMessage(bytes: frame.payload) else {
            Issue.record("the first message is not the challenge")
            return
        }
        #expect(relay.metric("relay_listeners_connected") == 1)
    }

    static let malformed: [(String, [UInt8])] = [
        ("garbage", Array("\u{1}\u{2}garbage\r\n\r\n".utf8)),
        ("huge request line", Array(("GET /" + String(repeating: "a", count: 40_000) + " HTTP/1.1\r\n\r\n").utf8)),
        ("huge header", Array(("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 40_000) + "\r\n\r\n").utf8)),
        ("binary noise", (0..<4096).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index &* 7919) }),
    ]

    @Test(arguments: malformed)
    func malformedHTTPIsRefusedWith400(name: String, bytes: [UInt8]) throws {
        let relay = EmbeddedRelay()
        let client = try #require(try relay.connect())
        try client.send(bytes)
        #expect(try client.response()?.status == 400, "\(name)")
        #expect(client.isClosed, "\(name)")
        #expect(relay.metric("relay_rejections_total{reason=\"malformedRequest\"}") == 1, "\(name)")
        // The relay still works.
        _ = try relay.pair()
    }

    @Test func aRequestIsReadAcrossManyReads() throws {
        let relay = EmbeddedRelay()
        let side = try #require(try relay.connect())
        for byte in Array(WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())").utf8) {
            #expect(try side.response() == nil)
            try side.send([byte])
        }
        #expect(try side.response()?.status == 101)
    }

    @Test func metricsAreAnsweredInPrometheusText() throws {
        let relay = EmbeddedRelay()
        _ = try relay.pair()
        let client = try #require(try relay.connect(from: "203.0.113.5"))
        try client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(try client.response())
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(response.body.contains("relay_tunnels_paired 1.0\n"))
        #expect(response.body.contains("relay_connections_open 3.0\n"))
        #expect(response.body.contains("relay_draining 0.0\n"))
        #expect(client.isClosed)
    }

    @Test func aSlowRequestIsCutOffAtTheRequestTimeout() throws {
        let relay = EmbeddedRelay { $0.requestTimeout = .milliseconds(300) }
        let client = try #require(try relay.connect())
        try client.send("GET /cable/new/\(Relay.randomTunnelID()) HTTP/1.1\r\nHost: x\r\n")
        relay.advance(by: .milliseconds(299))
        #expect(!client.isClosed)
        relay.advance(by: .milliseconds(1))
        #expect(client.isClosed)
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 1)
        // The parser's complaint about the unfinished request is not counted as a second refusal.
        #expect(relay.metric("relay_rejections_total{reason=\"malformedRequest\"}") == 0)
        // An upgraded connection is not cut off by its request timer.
        let (authenticator, _) = try relay.pair()
        relay.advance(by: .milliseconds(400))
        try authenticator.send(RawFrame.client(opcode: 0x9, [1]))
        #expect(try authenticator.frames().map(\.opcode) == [0xA])
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 1)
    }

    /// A request the relay answered (metrics, or a refusal) is over: its connection closes at once and its request
    /// timer does not fire later as a timeout (issue 10, defect 4).
    @Test func answeredRequestsAreNotCountedAsTimeouts() throws {
        let relay = EmbeddedRelay { $0.requestTimeout = .seconds(2) }
        for path in ["/metrics", "/nowhere", "/cable/new/\(Relay.randomTunnelID())"] {
            let client = try #require(try relay.connect())
            try client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.response() != nil, "\(path)")
            #expect(client.isClosed, "\(path)")
        }
        relay.advance(by: .seconds(3))
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 0)
    }

    @Test func anUpgradeRequestWhoseBodyNeverEndsIsCutOffAndFreesItsTunnel() throws {
        let relay = EmbeddedRelay { $0.requestTimeout = .milliseconds(300) }
        let client = try #require(try relay.connect())
        let request = WebSocketUpgrade.request(
            path: "/cable/new/\(Relay.randomTunnelID())", extra: "Content-Length: 1000000\r\n")
        try client.send(request + "partial body")
        #expect(relay.metric("relay_tunnels_open") == 1)
        relay.advance(by: .milliseconds(300))
        #expect(client.isClosed)
        #expect(relay.metric("relay_tunnels_open") == 0)
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 1)
        #expect(relay.log.tunnelLines.first?["outcome"] == "neverJoined")
    }

    @Test func connectionsInTheHTTPStageAreLimitedPerAddressAndOverall() throws {
        let relay = EmbeddedRelay {
            $0.limits.maximumConnectionsPerAddress = 2
            $0.limits.maximumPendingConnections = 3
        }
        let first = try #require(try relay.connect(from: "192.0.2.1"))
        _ = try #require(try relay.connect(from: "192.0.2.2"))
        #expect(try relay.connect(from: "192.0.2.3") == nil)  // the same /24
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyPendingConnections\"}") == 1)
        _ = try #require(try relay.connect(from: "198.51.100.1"))
        #expect(try relay.connect(from: "203.0.113.1") == nil)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyPendingConnectionsOverall\"}") == 1)
        // A connection leaving the HTTP stage (upgraded) makes room.
        try first.send(WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"))
        #expect(try relay.connect(from: "203.0.113.1") != nil)
    }
}
