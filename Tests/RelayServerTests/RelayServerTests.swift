import Foundation
import NIOCore
import Synchronization
import RelayCore
import RelayServer
import Testing

/// A real relay on loopback TCP, driven by a raw WebSocket client that can be as hostile as needed.
@Suite(.timeLimit(.minutes(1)))
struct RelayServerTests {
    @Test func pairsAndRelaysVerbatimBothWaysInOrder() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try await relay.new(tunnelID)
        #expect(routingID.count == 6 && routingID.allSatisfy(\.isHexDigit))
        let client = try await relay.connect(routingID: routingID.lowercased(), tunnelID: tunnelID.lowercased())

        let messages: [[UInt8]] = [[0], Array(0...255), [UInt8](repeating: 0xA5, count: 16 * 1024), [7, 7]]
        for message in messages { try await client.send(RawClient.binary(message)) }
        for message in messages {
            #expect(
                try await authenticator.readFrame() == RawFrame(fin: true, opcode: 2, masked: false, payload: message))
        }
        try await authenticator.send(RawClient.binary([1, 2, 3]))
        #expect(try await client.readFrame()?.payload == [1, 2, 3])

        await client.close()
        #expect(try await authenticator.expectClose() == 1000)
        try await Relay.eventually("the tunnel log line") { relay.log.tunnelLines.count == 1 }
        let line = relay.log.tunnelLines[0]
        #expect(line["outcome"] == "completed")
        #expect(line["routing_id"] == routingID)
        #expect(line["tunnel"] == String(tunnelID.prefix(8)))
        #expect(line["bytes_from_client"] == String(messages.map(\.count).reduce(0, +)))
        #expect(line["messages_from_client"] == "4" && line["messages_from_authenticator"] == "1")
        #expect(line["bytes_from_authenticator"] == "3")
        #expect(line["duration_ms"] != nil && line["pair_ms"] != nil)
    }

    @Test func buffersMessagesSentBeforeTheClientJoins() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try await relay.new(tunnelID)
        try await authenticator.send(RawClient.binary([1]) + RawClient.binary([2, 2]) + RawClient.binary([3, 3, 3]))
        try await Relay.eventually("the messages to be buffered") {
            relay.server.metricsText().contains("relay_tunnels_open 1")
        }
        try await Task.sleep(for: .milliseconds(20))
        let client = try await relay.connect(routingID: routingID, tunnelID: tunnelID)
        #expect(try await client.readFrame()?.payload == [1])
        #expect(try await client.readFrame()?.payload == [2, 2])
        #expect(try await client.readFrame()?.payload == [3, 3, 3])
        try await authenticator.send(RawClient.binary([4]))
        #expect(try await client.readFrame()?.payload == [4])
    }

    @Test func bufferOverflowBeforeTheJoinClosesTheTunnel() async throws {
        let relay = try await Relay.start { $0.limits.maximumBufferedBytes = 100 }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, _) = try await relay.new()
        try await authenticator.send(RawClient.binary(Array(repeating: 1, count: 60)))
        try await authenticator.send(RawClient.binary(Array(repeating: 2, count: 60)))
        #expect(try await authenticator.expectClose() == 1008)
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "bufferFull" }
    }

    @Test func aCloseFrameClosesBothSides() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await authenticator.send(RawClient.frame(opcode: 0x8, [0x03, 0xE8]))
        #expect(try await authenticator.expectClose() == 1000)  // the echo
        #expect(try await client.expectClose() == 1000)
        try await Relay.eventually("the metrics") { relay.metric("relay_tunnels_open") == 0 }
        #expect(relay.metric("relay_connections_open") == 0)
    }

    @Test(arguments: [true, false])
    func anAbruptDisconnectClosesThePeer(authenticatorLeaves: Bool) async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        let (leaving, staying) = authenticatorLeaves ? (authenticator, client) : (client, authenticator)
        await leaving.close()
        #expect(try await staying.expectClose() == 1000)
    }

    @Test func anAuthenticatorLeavingBeforeTheJoinEndsTheTunnel() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try await relay.new(tunnelID)
        await authenticator.close()
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "neverJoined" }
        let (_, response) = try await relay.request(
            RawClient.upgradeRequest(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(response.status == 404)
    }

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
        RefusalCase("unknown path", 404, "unknownPath") { _ in RawClient.upgradeRequest(path: "/cable/other/00") },
        RefusalCase("query string", 400, "badHex") { RawClient.upgradeRequest(path: "/cable/new/\($0)?x=1") },
        RefusalCase("bad hex", 400, "badHex") { _ in RawClient.upgradeRequest(path: "/cable/new/XYZ") },
        RefusalCase("duplicate", 409, "duplicateTunnel") { RawClient.upgradeRequest(path: "/cable/new/\($0)") },
        RefusalCase("unknown tunnel", 404, "unknownTunnel") { _ in
            RawClient.upgradeRequest(path: "/cable/connect/000000/\(Relay.randomTunnelID())")
        },
        RefusalCase("no subprotocol", 400, "missingSubprotocol") {
            RawClient.upgradeRequest(path: "/cable/connect/000000/\($0)", protocols: nil)
        },
        RefusalCase("wrong subprotocol", 400, "missingSubprotocol") {
            RawClient.upgradeRequest(path: "/cable/new/\($0)", protocols: "chat, superchat")
        },
        RefusalCase("POST", 405, "methodNotAllowed") {
            RawClient.upgradeRequest(path: "/cable/new/\($0)", method: "POST")
        },
        RefusalCase("bad version", 426, "unsupportedWebSocketVersion") {
            RawClient.upgradeRequest(path: "/cable/new/\($0)", version: "8")
        },
        RefusalCase("no version", 426, "unsupportedWebSocketVersion") {
            RawClient.upgradeRequest(path: "/cable/new/\($0)", version: nil)
        },
        RefusalCase("no key", 400, "badWebSocketKey") { RawClient.upgradeRequest(path: "/cable/new/\($0)", key: nil) },
        RefusalCase("short key", 400, "badWebSocketKey") {
            RawClient.upgradeRequest(path: "/cable/new/\($0)", key: "c2hvcnQ=")
        },
        RefusalCase("no upgrade", 426, "upgradeRequired") { "GET /cable/new/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" },
        RefusalCase("plain GET", 404, "unknownPath") { _ in "GET / HTTP/1.1\r\nHost: x\r\n\r\n" },
        RefusalCase("DELETE", 405, "methodNotAllowed") { _ in
            "DELETE /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        },
    ]

    @Test(arguments: refusals)
    func refusesWithStatus(_ refusal: RefusalCase) async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (holder, _) = try await relay.new(tunnelID)  // for the duplicate
        let (client, response) = try await relay.request(refusal.request(tunnelID))
        #expect(response.status == refusal.status)
        #expect(response.header("Connection") == "close")
        #expect(response.header("Sec-WebSocket-Accept") == nil)
        try await client.expectEOF()
        #expect(relay.metric("relay_rejections_total{reason=\"\(refusal.reason)\"}") == 1)
        if refusal.reason == "unsupportedWebSocketVersion" {
            #expect(response.header("Sec-WebSocket-Version") == "13")
        }
        // The registered tunnel is untouched.
        try await holder.send(RawClient.frame(opcode: 0x9, [5]))
        #expect(try await holder.readFrame() == RawFrame(fin: true, opcode: 0xA, masked: false, payload: [5]))
    }

    @Test func aSecondClientCannotJoin() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (_, routingID) = try await relay.new(tunnelID)
        _ = try await relay.connect(routingID: routingID, tunnelID: tunnelID)
        let (_, response) = try await relay.request(
            RawClient.upgradeRequest(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(response.status == 409)
    }

    @Test func routingIDPrefix() async throws {
        let relay = try await Relay.start { $0.routingIDPrefix = 0xC3 }
        defer { Task { await relay.server.shutdown() } }
        for _ in 0..<3 {
            let (_, routingID) = try await relay.new()
            #expect(routingID.hasPrefix("C3"))
        }
    }

    @Test func aTextFrameClosesTheTunnel() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawClient.frame(opcode: 0x1, Array("hello".utf8)))
        #expect(try await client.expectClose() == 1003)
        #expect(try await authenticator.expectClose() == 1003)
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "textFrame" }
    }

    @Test func anOversizeFrameClosesWith1009BeforeItsPayloadArrives() async throws {
        let relay = try await Relay.start { $0.limits.maximumMessageBytes = 1000 }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        // Only the header of a 1001-byte frame: the relay must not wait for the payload.
        let header = Array(RawClient.binary(Array(repeating: 0, count: 1001)).prefix(8))
        try await client.send(header)
        #expect(try await client.expectClose() == 1009)
        #expect(try await authenticator.expectClose() == 1009)
        #expect(relay.metric("relay_tunnels_closed_total{outcome=\"messageTooLarge\"}") == 1)
    }

    @Test func fragmentedMessagesAreJoinedWithinTheLimit() async throws {
        let relay = try await Relay.start { $0.limits.maximumMessageBytes = 1000 }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(
            RawClient.frame(opcode: 0x2, [1, 2], fin: false) + RawClient.frame(opcode: 0x9, [9])
                + RawClient.frame(opcode: 0x0, [3], fin: false) + RawClient.frame(opcode: 0x0, [4], fin: true))
        #expect(try await client.readFrame()?.opcode == 0xA)  // the pong, between fragments
        #expect(try await authenticator.readFrame()?.payload == [1, 2, 3, 4])

        // Fragments adding up to more than the limit.
        try await client.send(
            RawClient.frame(opcode: 0x2, Array(repeating: 1, count: 600), fin: false)
                + RawClient.frame(opcode: 0x0, Array(repeating: 2, count: 600), fin: true))
        #expect(try await client.expectClose() == 1009)
        #expect(try await authenticator.expectClose() == 1009)
    }

    @Test(arguments: [
        ("stray continuation", RawClient.frame(opcode: 0x0, [1])),
        ("unmasked", RawClient.frame(opcode: 0x2, [1], masked: false)),
        ("reserved bit", RawClient.frame(opcode: 0x2, [1], rsv: 0x4)),
        ("reserved opcode", RawClient.frame(opcode: 0x3, [1])),
        ("fragmented ping", RawClient.frame(opcode: 0x9, [1], fin: false)),
        ("long ping", RawClient.frame(opcode: 0x9, Array(repeating: 1, count: 126))),
        ("new message inside a fragmented one", RawClient.frame(opcode: 0x2, [1], fin: false) + RawClient.binary([2])),
    ])
    func protocolErrorsCloseWith1002(name: String, bytes: [UInt8]) async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(bytes)
        #expect(try await client.expectClose() == 1002, "\(name)")
        #expect(try await authenticator.expectClose() == 1002, "\(name)")
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "protocolError" }
    }

    @Test func tooManyMessagesClosesWith1008() async throws {
        let relay = try await Relay.start { $0.limits.maximumMessagesPerSide = 2 }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawClient.binary([1]) + RawClient.binary([2]) + RawClient.binary([3]))
        #expect(try await authenticator.readFrame()?.payload == [1])
        #expect(try await authenticator.readFrame()?.payload == [2])
        #expect(try await authenticator.expectClose() == 1008)
        #expect(try await client.expectClose() == 1008)
    }

    @Test func idleTunnelsClose() async throws {
        // 1.5 s: pairing must finish inside it even on a loaded machine.
        let relay = try await Relay.start { $0.limits.idleTimeout = .milliseconds(1500) }
        defer { Task { await relay.server.shutdown() } }
        let start = ContinuousClock.now
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawClient.frame(opcode: 0x9, []))  // a ping is not a message: still idle
        #expect(try await client.readFrame()?.opcode == 0xA)
        #expect(try await client.expectClose() == 1001)
        #expect(try await authenticator.expectClose() == 1001)
        #expect(ContinuousClock.now - start >= .milliseconds(1500))
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "idle" }
    }

    @Test func lifetimeExpiresABusyTunnel() async throws {
        let relay = try await Relay.start {
            $0.limits.tunnelLifetime = .milliseconds(1500)  // pairing must finish inside it on a loaded machine
            $0.limits.maximumMessagesPerSide = 1000
        }
        defer { Task { await relay.server.shutdown() } }
        let start = ContinuousClock.now
        let (authenticator, client) = try await relay.pair()
        while relay.metric("relay_tunnels_open") != 0, ContinuousClock.now - start < .seconds(6) {
            try? await client.send(RawClient.binary([1]))
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(ContinuousClock.now - start >= .milliseconds(1500))
        #expect(try await authenticator.expectClose() == 1001)
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "lifetimeExpired" }
    }

    @Test func limitsWebSocketsPerAddressAndTunnels() async throws {
        let relay = try await Relay.start {
            $0.limits.maximumConnectionsPerAddress = 2
            $0.limits.maximumTunnels = 3
        }
        defer { Task { await relay.server.shutdown() } }
        _ = try await relay.new()
        _ = try await relay.new()
        let (_, third) = try await relay.request(RawClient.upgradeRequest(path: "/cable/new/\(Relay.randomTunnelID())"))
        #expect(third.status == 429)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyConnectionsFromAddress\"}") == 1)
        // Another source network (IPv4 /24) is counted apart, up to the tunnel limit.
        let (_, other) = try await relay.request(
            RawClient.upgradeRequest(path: "/cable/new/\(Relay.randomTunnelID())"), from: "127.0.1.2")
        #expect(other.status == 101)
        let (_, full) = try await relay.request(
            RawClient.upgradeRequest(path: "/cable/new/\(Relay.randomTunnelID())"), from: "127.0.2.3")
        #expect(full.status == 429)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyTunnels\"}") == 1)
    }

    @Test func limitsConnectionsStillInTheHTTPStagePerAddress() async throws {
        let relay = try await Relay.start { $0.limits.maximumConnectionsPerAddress = 2 }
        defer { Task { await relay.server.shutdown() } }
        let first = try await RawClient.connect(port: relay.port)
        let second = try await RawClient.connect(port: relay.port)
        try await Relay.eventually("two connections") { relay.metric("relay_connections_open") == 2 }
        let third = try await RawClient.connect(port: relay.port)
        try await third.expectEOF()
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyPendingConnections\"}") == 1)
        await first.close()
        await second.close()
    }

    static let malformed: [(String, [UInt8])] = [
        ("garbage", Array("\u{1}\u{2}garbage\r\n\r\n".utf8)),
        ("huge request line", Array(("GET /" + String(repeating: "a", count: 40_000) + " HTTP/1.1\r\n\r\n").utf8)),
        ("huge header", Array(("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 40_000) + "\r\n\r\n").utf8)),
        ("binary noise", (0..<4096).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index &* 7919) }),
    ]

    @Test(arguments: malformed)
    func malformedHTTPIsRefusedWith400(name: String, bytes: [UInt8]) async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let client = try await RawClient.connect(port: relay.port)
        try? await client.send(bytes)
        let response = try? await client.readResponse()
        #expect(response?.status == 400, "\(name)")
        try await client.expectEOF()
        #expect(relay.metric("relay_rejections_total{reason=\"malformedRequest\"}") == 1, "\(name)")
        // The relay still works.
        _ = try await relay.pair()
    }

    @Test func aSlowRequestIsCutOff() async throws {
        // 1 s rather than less: the upgrade below must finish within it even on a loaded machine.
        let relay = try await Relay.start { $0.requestTimeout = .seconds(1) }
        defer { Task { await relay.server.shutdown() } }
        let start = ContinuousClock.now
        let client = try await RawClient.connect(port: relay.port)
        // Never finished. (On a loaded machine the relay may already have given up: the send may fail.)
        try? await client.send("GET /cable/new/\(Relay.randomTunnelID()) HTTP/1.1\r\nHost: x\r\n")
        try await client.expectEOF()
        #expect(ContinuousClock.now - start >= .seconds(1))
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 1)
        // An upgraded connection is not cut off by the request timeout.
        let (authenticator, _) = try await relay.pair()
        try await Task.sleep(for: .milliseconds(1200))
        try await authenticator.send(RawClient.frame(opcode: 0x9, [1]))
        #expect(try await authenticator.readFrame()?.opcode == 0xA)
    }

    /// A request the relay answered (metrics, or a refusal) is over: its connection closes at once and its request
    /// timer does not fire later as a timeout (issue 10, defect 4).
    ///
    /// The timeout is 2 s, so that a loaded machine still sends each request in time; the connection must close well
    /// before it (by the relay, not the timer), and nothing may be counted once every timer has passed.
    @Test func answeredRequestsAreNotCountedAsTimeouts() async throws {
        let relay = try await Relay.start { $0.requestTimeout = .seconds(2) }
        defer { Task { await relay.server.shutdown() } }
        let start = ContinuousClock.now
        for path in ["/metrics", "/nowhere", "/cable/new/\(Relay.randomTunnelID())"] {
            let client = try await RawClient.connect(port: relay.port)
            try await client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try await client.readResponse()
            try await client.expectEOF(timeout: .milliseconds(1500))  // closed by the relay, not by the timer
        }
        // Past every request timer.
        try await Task.sleep(until: start + .milliseconds(2500 + 1500 * 3))
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") ?? 0 == 0)
    }

    @Test func anUpgradeRequestWhoseBodyNeverEndsIsCutOffAndFreesItsTunnel() async throws {
        let relay = try await Relay.start { $0.requestTimeout = .milliseconds(300) }
        defer { Task { await relay.server.shutdown() } }
        let client = try await RawClient.connect(port: relay.port)
        let request = RawClient.upgradeRequest(
            path: "/cable/new/\(Relay.randomTunnelID())", extra: "Content-Length: 1000000\r\n")
        try? await client.send(request + "partial body")
        try await client.expectEOF()
        try await Relay.eventually("the tunnel to go") { relay.metric("relay_tunnels_open") == 0 }
        #expect(relay.metric("relay_rejections_total{reason=\"requestTimeout\"}") == 1)
    }

    @Test func metricsCountAScenario() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawClient.binary(Array(repeating: 1, count: 100)))
        _ = try await authenticator.readFrame()
        try await authenticator.send(RawClient.binary(Array(repeating: 2, count: 28)))
        _ = try await client.readFrame()
        _ = try await relay.request(RawClient.upgradeRequest(path: "/cable/new/XYZ"))
        await client.close()
        _ = try await authenticator.expectClose()
        try await Relay.eventually("the tunnel to close") { relay.metric("relay_tunnels_open") == 0 }

        let (_, response) = try await relay.request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = response.body
        for sample in [
            "relay_tunnels_opened_total 1", "relay_tunnels_paired_total 1", "relay_messages_relayed_total 2",
            "relay_bytes_relayed_total 128", "relay_rejections_total{reason=\"badHex\"} 1",
            "relay_tunnels_closed_total{outcome=\"completed\"} 1", "relay_tunnels_open 0", "relay_tunnels_paired 0",
            "# TYPE relay_rejections_total counter", "# TYPE relay_tunnels_open gauge",
        ] {
            #expect(text.contains(sample + "\n"), "\(sample)")
        }
        #expect(relay.server.metricsText().contains("relay_connections_total"))
    }

    @Test func logLinesNeverCarryMessageContents() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        let secret = Array("SECRET-PAYLOAD".utf8)
        try await client.send(RawClient.binary(secret))
        _ = try await authenticator.readFrame()
        await client.close()
        try await Relay.eventually("the log line") { relay.log.tunnelLines.count == 1 }
        let everything = relay.log.lines.withLock { $0.map { "\($0.message) \($0.metadata)" }.joined() }
        #expect(!everything.contains("SECRET"))
        #expect(!everything.contains(secret.map { String(format: "%02X", $0) }.joined()))
    }

    @Test func shutdownClosesTunnelsWith1001() async throws {
        let relay = try await Relay.start()
        let (authenticator, client) = try await relay.pair()
        let pending = try await RawClient.connect(port: relay.port)
        await relay.server.shutdown()
        #expect(try await authenticator.expectClose() == 1001)
        #expect(try await client.expectClose() == 1001)
        try await pending.expectEOF()
        await relay.server.shutdown()  // again: nothing happens
        await #expect(throws: (any Error).self) { _ = try await RawClient.connect(port: relay.port) }
    }

    @Test func portZeroAndBaseURL() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        #expect(relay.port > 0)
        #expect(relay.server.baseURL == "ws://127.0.0.1:\(relay.port)")
    }

    @Test func startFailsClearlyWhenThePortIsTaken() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        var configuration = RelayServerConfiguration()
        configuration.port = relay.port
        await #expect {
            _ = try await RelayServer.start(configuration, logger: LogCapture().logger)
        } throws: { error in
            guard case .cannotListen(_, let port, _) = error as? RelayServerError else { return false }
            return port == relay.port
        }
    }
}
