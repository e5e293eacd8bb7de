import Foundation
import NIOCore
import NIOEmbedded
import Relay
import Synchronization
import TestSupport
import Testing

@testable import RelayIO

/// Upgraded connections in `EmbeddedChannel`: frames in as bytes, frames out parsed, time on a manual clock.
struct RelayWebSocketHandlerTests {
    @Test func relaysVerbatimBothWaysInOrder() throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        let messages: [[UInt8]] = [[0], Array(0...255), [UInt8](repeating: 0xA5, count: 16 * 1024), []]
        try client.send(messages.flatMap(RawFrame.clientBinary))
        #expect(
            try authenticator.frames() == messages.map { RawFrame(fin: true, opcode: 2, masked: false, payload: $0) })
        try authenticator.send(RawFrame.clientBinary([1, 2, 3]))
        #expect(try client.frames().map(\.payload) == [[1, 2, 3]])
        #expect(relay.metric("relay_messages_relayed_total") == 5)
        #expect(relay.metric("relay_bytes_relayed_total") == 1 + 256 + 16 * 1024 + 3)
    }

    @Test func messagesSentBeforeTheClientJoinsAreDeliveredFirstAndInOrder() throws {
        let relay = EmbeddedRelay()
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try relay.new(tunnelID)
        try authenticator.send(
            RawFrame.clientBinary([1]) + RawFrame.clientBinary([2, 2]) + RawFrame.clientBinary([3, 3, 3]))
        let client = try relay.connect(routingID: routingID, tunnelID: tunnelID)
        try authenticator.send(RawFrame.clientBinary([4]))
        #expect(try client.frames().map(\.payload) == [[1], [2, 2], [3, 3, 3], [4]])
    }

    @Test func theBufferForAnAbsentClientIsBounded() throws {
        let relay = EmbeddedRelay { $0.limits.maximumBufferedBytes = 100 }
        let (authenticator, _) = try relay.new()
        try authenticator.send(RawFrame.clientBinary(Array(repeating: 1, count: 60)))
        #expect(!authenticator.isClosed)
        try authenticator.send(RawFrame.clientBinary(Array(repeating: 2, count: 60)))
        #expect(try authenticator.closeCode() == 1008)
        #expect(relay.log.tunnelLines.first?["outcome"] == "bufferFull")
    }

    @Test func aCloseFrameIsEchoedAndClosesTheOtherSideWith1000() throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        try authenticator.send(RawFrame.client(opcode: 0x8, [0x0F, 0xA0]))
        #expect(try authenticator.closeCode() == 4000)  // the echo
        #expect(try client.closeCode() == 1000)
        #expect(relay.metric("relay_tunnels_open") == 0)
        #expect(relay.metric("relay_connections_open") == 0)
        #expect(relay.log.tunnelLines.first?["outcome"] == "completed")
    }

    @Test(arguments: [true, false])
    func anAbruptDisconnectClosesThePeerWith1000(authenticatorLeaves: Bool) throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        let (leaving, staying) = authenticatorLeaves ? (authenticator, client) : (client, authenticator)
        leaving.disconnect()
        #expect(try staying.closeCode() == 1000)
        #expect(relay.metric("relay_connections_open") == 0)
    }

    @Test func anAuthenticatorLeavingBeforeTheJoinEndsTheTunnel() throws {
        let relay = EmbeddedRelay()
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try relay.new(tunnelID)
        authenticator.disconnect()
        #expect(relay.log.tunnelLines.first?["outcome"] == "neverJoined")
        let late = try #require(try relay.connect(from: "198.51.100.1"))
        try late.send(WebSocketUpgrade.request(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(try late.response()?.status == 404)
    }

    @Test func aTextFrameClosesBothSidesWith1003() throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        try client.send(RawFrame.client(opcode: 0x1, Array("hello".utf8), fin: false))  // refused at its first frame
        #expect(try client.closeCode() == 1003)
        #expect(try authenticator.closeCode() == 1003)
        #expect(relay.log.tunnelLines.first?["outcome"] == "textFrame")
    }

    @Test func anOversizeFrameIsRefusedFromItsHeader() throws {
        let relay = EmbeddedRelay { $0.limits.maximumMessageBytes = 1000 }
        let (authenticator, client) = try relay.pair()
        // Only the header of a 1001-byte frame: the relay must not wait for the payload.
        try client.send(Array(RawFrame.clientBinary(Array(repeating: 0, count: 1001)).prefix(8)))
        #expect(try client.closeCode() == 1009)
        #expect(try authenticator.closeCode() == 1009)
        #expect(relay.metric("relay_tunnels_closed_total{outcome=\"messageTooLarge\"}") == 1)
    }

    @Test func fragmentsAreJoinedWithinTheLimitAndPingsBetweenThemAnswered() throws {
        let relay = EmbeddedRelay { $0.limits.maximumMessageBytes = 1000 }
        let (authenticator, client) = try relay.pair()
        try client.send(
            RawFrame.client(opcode: 0x2, [1, 2], fin: false) + RawFrame.client(opcode: 0x9, [9])
                + RawFrame.client(opcode: 0x0, [3], fin: false) + RawFrame.client(opcode: 0xA, [8])
                + RawFrame.client(opcode: 0x0, [4], fin: true))
        #expect(try client.frames() == [RawFrame(fin: true, opcode: 0xA, masked: false, payload: [9])])
        // One frame, never fragmented.
        #expect(try authenticator.frames() == [RawFrame(fin: true, opcode: 0x2, masked: false, payload: [1, 2, 3, 4])])

        // Fragments adding up to exactly the limit pass; one byte more closes.
        try client.send(
            RawFrame.client(opcode: 0x2, Array(repeating: 1, count: 500), fin: false)
                + RawFrame.client(opcode: 0x0, Array(repeating: 2, count: 500), fin: true))
        #expect(try authenticator.frames().map(\.payload.count) == [1000])
        try client.send(
            RawFrame.client(opcode: 0x2, Array(repeating: 1, count: 600), fin: false)
                + RawFrame.client(opcode: 0x0, Array(repeating: 2, count: 401), fin: true))
        #expect(try client.closeCode() == 1009)
        #expect(try authenticator.closeCode() == 1009)
    }

    static let protocolErrors: [(String, [UInt8])] = [
        ("stray continuation", RawFrame.client(opcode: 0x0, [1])),
        ("unmasked", RawFrame.client(opcode: 0x2, [1], masked: false)),
        ("reserved bit", RawFrame.client(opcode: 0x2, [1], rsv: 0x4)),
        ("reserved opcode", RawFrame.client(opcode: 0x3, [1])),
        ("fragmented ping", RawFrame.client(opcode: 0x9, [1], fin: false)),
        ("long ping", RawFrame.client(opcode: 0x9, Array(repeating: 1, count: 126))),
        (
            "new message inside a fragmented one",
            RawFrame.client(opcode: 0x2, [1], fin: false) + RawFrame.clientBinary([2])
        ),
    ]

    @Test(arguments: protocolErrors)
    func protocolErrorsCloseBothSidesWith1002(name: String, bytes: [UInt8]) throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        try client.send(bytes)
        #expect(try client.closeCode() == 1002, "\(name)")
        #expect(try authenticator.closeCode() == 1002, "\(name)")
        #expect(relay.log.tunnelLines.first?["outcome"] == "protocolError", "\(name)")
        #expect(try authenticator.frames().isEmpty, "\(name)")  // nothing of it was relayed
    }

    @Test func framesAfterAFailureInTheSameReadAreNotRelayed() throws {
        let relay = EmbeddedRelay()
        let (authenticator, client) = try relay.pair()
        try client.send(
            RawFrame.clientBinary([1]) + RawFrame.client(opcode: 0x2, [2], masked: false) + RawFrame.clientBinary([3]))
        let frames = try authenticator.frames()
        #expect(frames.map(\.opcode) == [0x2, 0x8])
        #expect(frames.first?.payload == [1] && frames.last?.closeCode == 1002)
    }

    @Test func tooManyMessagesClosesWith1008() throws {
        let relay = EmbeddedRelay { $0.limits.maximumMessagesPerSide = 2 }
        let (authenticator, client) = try relay.pair()
        try client.send(RawFrame.clientBinary([1]) + RawFrame.clientBinary([2]) + RawFrame.clientBinary([3]))
        let frames = try authenticator.frames()
        #expect(frames.map(\.payload) == [[1], [2], [0x03, 0xF0]])
        // The relay started the close: the authenticator's side ends when it answers.
        #expect(!authenticator.isClosed)
        try authenticator.send(RawFrame.client(opcode: 0x8, [0x03, 0xF0]))
        #expect(authenticator.isClosed)
        #expect(try client.closeCode() == 1008)
        #expect(relay.log.tunnelLines.first?["outcome"] == "tooManyMessages")
    }

    @Test func idleTunnelsCloseWith1001AndPingsAreNotActivity() throws {
        let relay = EmbeddedRelay { $0.limits.idleTimeout = .seconds(60) }
        let (authenticator, client) = try relay.pair()
        relay.advance(by: .seconds(59))
        try client.send(RawFrame.client(opcode: 0x9, []))  // a ping is not a message: still idle
        #expect(try client.frames().map(\.opcode) == [0xA])
        relay.advance(by: .seconds(1))
        #expect(try client.closeCode() == 1001)
        #expect(try authenticator.closeCode() == 1001)
        #expect(relay.log.tunnelLines.first?["outcome"] == "idle")
        #expect(relay.log.tunnelLines.first?["duration_ms"] == "60000")
    }

    @Test func theLifetimeEndsABusyTunnel() throws {
        let relay = EmbeddedRelay {
            $0.limits.tunnelLifetime = .seconds(120)
            $0.limits.maximumMessagesPerSide = 1000
        }
        let (authenticator, client) = try relay.pair()
        for _ in 0..<119 {
            relay.advance(by: .seconds(1))
            try client.send(RawFrame.clientBinary([1]))
        }
        #expect(try authenticator.frames().count == 119)
        #expect(!authenticator.isClosed)
        relay.advance(by: .seconds(1))
        #expect(try authenticator.closeCode() == 1001)
        #expect(try client.closeCode() == 1001)
        let line = try #require(relay.log.tunnelLines.first)
        #expect(line["outcome"] == "lifetimeExpired" && line["duration_ms"] == "120000")
        #expect(line["messages_from_client"] == "119")
    }

    @Test func theTunnelLineCarriesCountsAndNeverContents() throws {
        let relay = EmbeddedRelay()
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try relay.new(tunnelID)
        relay.clock.advance(by: .milliseconds(7))
        let client = try relay.connect(routingID: routingID, tunnelID: tunnelID)
        let secret = Array("SECRET-PAYLOAD".utf8)
        try client.send(RawFrame.clientBinary(secret))
        try authenticator.send(RawFrame.clientBinary([1, 2, 3]))
        relay.clock.advance(by: .milliseconds(5))
        client.disconnect()
        let line = try #require(relay.log.tunnelLines.first)
        #expect(line["outcome"] == "completed" && line["routing_id"] == routingID)
        #expect(line["tunnel"] == String(tunnelID.prefix(8)))
        #expect(line["pair_ms"] == "7" && line["duration_ms"] == "12")
        #expect(line["bytes_from_client"] == "14" && line["messages_from_client"] == "1")
        #expect(line["bytes_from_authenticator"] == "3" && line["messages_from_authenticator"] == "1")
        let everything = relay.log.lines.withLock { $0.map { "\($0.message) \($0.metadata)" }.joined() }
        #expect(!everything.contains("SECRET"))
        #expect(!everything.contains(secret.map { String(format: "%02X", $0) }.joined()))
        #expect(!everything.contains(tunnelID))
    }
}
