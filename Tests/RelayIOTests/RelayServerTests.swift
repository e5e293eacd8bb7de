import Foundation
import Hybrid
import NIOCore
import Synchronization
import Relay
import RelayIO
import TestSupport
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
        for message in messages { try await client.send(RawFrame.clientBinary(message)) }
        for message in messages {
            #expect(
                try await authenticator.readFrame() == RawFrame(fin: true, opcode: 2, masked: false, payload: message))
        }
        try await authenticator.send(RawFrame.clientBinary([1, 2, 3]))
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

    @Test func aQueryStringIsAcceptedAndIgnored() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, response) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/new/\(tunnelID)?client=chrome&v=2"))
        #expect(response.status == 101)
        let routingID = try #require(response.header("X-caBLE-Routing-ID"))
        let client = try await relay.connect(routingID: routingID, tunnelID: "\(tunnelID)?x")
        try await client.send(RawFrame.clientBinary([4, 2]))
        #expect(try await authenticator.readFrame()?.payload == [4, 2])
        #expect(relay.metric("relay_tunnels_paired_total") == 1)
    }

    /// The computer never reads while the phone sends 64 MiB: the relay stops reading from the phone once its writes
    /// to the computer pile up, takes a bounded share of the 64 MiB, and after the stall timeout ends the tunnel with
    /// 1008. Without the pause the relay would read all of it and buffer it for the computer.
    @Test func aPeerThatNeverReadsPausesTheSenderThenEndsTheTunnel() async throws {
        let relay = try await Relay.start {
            $0.limits.stalledPeerTimeout = .seconds(3)
            $0.limits.maximumMessagesPerSide = 1_000_000
        }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.stopReading()
        let frame = RawFrame.clientBinary([UInt8](repeating: 0x5A, count: 16 * 1024))
        let attempted = 4096 * frame.count
        let sender = Task {
            for _ in 0..<4096 { try await authenticator.send(frame) }
        }
        defer { sender.cancel() }
        #expect(try await authenticator.expectClose(timeout: .seconds(30)) == 1008)
        try await Relay.eventually("the tunnel log line") { relay.log.tunnelLines.count == 1 }
        let line = relay.log.tunnelLines[0]
        #expect(line["outcome"] == "peerNotReading")
        // What the relay took from the phone: what the kernel's socket buffers toward the computer hold (a few MiB on
        // loopback) and the connection's high water mark, far below what the phone tried to send.
        let taken = try #require(line["bytes_from_authenticator"].flatMap { Int($0) })
        #expect(taken < attempted / 4, "the relay read \(taken) of \(attempted) bytes")
        #expect(relay.metric("relay_tunnels_closed_total{outcome=\"peerNotReading\"}") == 1)
    }

    /// RFC 6455 §5.5.1: the side the relay closes gets the close frame and keeps its TCP connection until it
    /// answers, so that the frame never arrives together with the end of the stream.
    @Test func theRelayEndsTheConnectionWhenThePeerAnswersItsClose() async throws {
        // A grace far beyond the test's waits: only the answer can end the connection.
        let relay = try await Relay.start { $0.limits.closeGrace = .seconds(60) }
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        await authenticator.close()
        let close = try #require(try await client.readFrame())
        #expect(close.opcode == 8 && close.closeCode == 1000)
        await #expect(throws: (any Error).self) { try await client.expectEOF(timeout: .milliseconds(300)) }
        try await client.send(RawFrame.client(opcode: 0x8, close.payload))
        try await client.expectEOF(timeout: .milliseconds(500))
    }

    @Test func aHalfCloseRelaysWhatCameBeforeItThenClosesThePeer() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawFrame.clientBinary([1, 2]))
        try await client.halfClose()
        #expect(try await authenticator.readFrame()?.payload == [1, 2])
        #expect(try await authenticator.expectClose() == 1000)
        try await client.expectEOF()
        try await Relay.eventually("the log line") { relay.log.tunnelLines.first?["outcome"] == "completed" }
    }

    @Test func aSecondClientCannotJoin() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let tunnelID = Relay.randomTunnelID()
        let (_, routingID) = try await relay.new(tunnelID)
        _ = try await relay.connect(routingID: routingID, tunnelID: tunnelID)
        let (_, response) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(response.status == 409)
    }

    @Test func everyTunnelGetsTheInstancesRoutingID() async throws {
        let relay = try await Relay.start { $0.routingID = try? RoutingID(hex: "C3D4E5") }
        defer { Task { await relay.server.shutdown() } }
        #expect(relay.server.routingID.hex == "C3D4E5")
        for _ in 0..<3 {
            let (_, routingID) = try await relay.new()
            #expect(routingID == "C3D4E5")
        }
        let (_, response) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/connect/C3D4E6/\(Relay.randomTunnelID())"))
        #expect(response.status == 404)
        #expect(relay.metric("relay_rejections_total{reason=\"unknownRoutingID\"}") == 1)
        // Without one configured, a random routing ID is the same for every tunnel.
        let other = try await Relay.start()
        defer { Task { await other.server.shutdown() } }
        let (_, first) = try await other.new()
        let (_, second) = try await other.new()
        #expect(first == second && first == other.server.routingID.hex)
    }

    @Test func limitsWebSocketsPerAddressAndTunnels() async throws {
        let relay = try await Relay.start {
            $0.limits.maximumConnectionsPerAddress = 2
            $0.limits.maximumTunnels = 3
        }
        defer { Task { await relay.server.shutdown() } }
        _ = try await relay.new()
        _ = try await relay.new()
        let (_, third) = try await relay.request(WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"))
        #expect(third.status == 429)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyConnectionsFromAddress\"}") == 1)
        // Another source network (IPv4 /24) is counted apart, up to the tunnel limit.
        let (_, other) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"), from: "127.0.1.2")
        #expect(other.status == 101)
        let (_, full) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"), from: "127.0.2.3")
        #expect(full.status == 429)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyTunnels\"}") == 1)
    }

    @Test func metricsCountAScenario() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let (authenticator, client) = try await relay.pair()
        try await client.send(RawFrame.clientBinary(Array(repeating: 1, count: 100)))
        _ = try await authenticator.readFrame()
        try await authenticator.send(RawFrame.clientBinary(Array(repeating: 2, count: 28)))
        _ = try await client.readFrame()
        _ = try await relay.request(WebSocketUpgrade.request(path: "/cable/new/XYZ"))
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
            "relay_tunnels_closed_total{outcome=\"completed\"} 1", "relay_tunnels_open 0.0", "relay_tunnels_paired 0.0",
            "# TYPE relay_rejections_total counter", "# TYPE relay_tunnels_open gauge",
        ] {
            #expect(text.contains(sample + "\n"), "\(sample)")
        }
        #expect(relay.server.metricsText().contains("relay_connections_total"))
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
            // The system's reason in a person's terms: no NIO call name, no errno number.
            guard case .cannotListen(_, let port, let reason) = error as? RelayServerError else { return false }
            return port == relay.port && reason == "address already in use"
        }
    }
}
