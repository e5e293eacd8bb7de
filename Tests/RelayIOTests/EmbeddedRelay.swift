import Foundation
import Hybrid
import Logging
import NIOCore
import NIOEmbedded
import Relay
import TestSupport
import Testing

@testable import RelayIO

/// The relay without sockets: its state, on a manual clock, and connections in `EmbeddedChannel`s with the
/// pipeline `RelayServer` gives every accepted connection. Everything runs on the test's thread; time moves only
/// when the test advances it.
final class EmbeddedRelay {
    let configuration: RelayServerConfiguration
    let clock = ManualClock()
    let log = LogCapture()
    let state: RelayState
    private var connections: [EmbeddedConnection] = []
    /// The routing ID of an embedded relay whose configuration names none.
    static let routingID = try! RoutingID(hex: "0A0B0C")

    /// - Parameter routingIDIsConfigured: false for a relay whose routing ID is random, as `RelayServer` makes one
    ///   when its configuration names none.
    ///   `contacts` are the records its contact file held.
    init(
        routingIDIsConfigured: Bool = true, contacts: [ContactRecord] = [],
        _ configure: (inout RelayServerConfiguration) -> Void = { _ in }
    ) {
        var configuration = RelayServerConfiguration()
        configure(&configuration)
        self.configuration = configuration
        let clock = clock
        let routingID = configuration.routingID ?? Self.routingID
        state = RelayState(
            limits: configuration.limits, addressRules: configuration.addressRules, routingID: routingID,
            logger: log.logger, now: { clock.now },
            contacts: RelayContacts(
                configuration: configuration.contacts, routingID: routingID,
                routingIDIsConfigured: routingIDIsConfigured, logger: log.logger, records: contacts,
                now: { clock.now }))
    }

    /// An accepted TCP connection from `address`; `nil` when the relay closes it at once (its limits).
    func connect(from address: String = "192.0.2.1") throws -> EmbeddedConnection? {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: address, port: 40_000)).wait()
        do {
            try RelayServer.configure(channel, configuration: configuration, state: state)
        } catch {
            _ = try? channel.finish(acceptAlreadyClosed: true)
            return nil
        }
        let connection = EmbeddedConnection(channel: channel, relay: self)
        connections.append(connection)
        return connection
    }

    /// Registers a tunnel: the authenticator side and the routing ID the relay gave it.
    func new(_ tunnelID: String = Relay.randomTunnelID(), from address: String = "192.0.2.1") throws -> (
        EmbeddedConnection, routingID: String
    ) {
        let side = try #require(try connect(from: address))
        try side.send(WebSocketUpgrade.request(path: "/cable/new/\(tunnelID)"))
        let response = try #require(try side.response())
        try #require(response.status == 101)
        #expect(response.header("Sec-WebSocket-Protocol") == "fido.cable")
        return (side, try #require(response.header("X-caBLE-Routing-ID")))
    }

    /// Joins a tunnel as the client side.
    func connect(routingID: String, tunnelID: String, from address: String = "198.51.100.1") throws
        -> EmbeddedConnection
    {
        let side = try #require(try connect(from: address))
        try side.send(WebSocketUpgrade.request(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        let response = try #require(try side.response())
        try #require(response.status == 101)
        #expect(response.header("X-caBLE-Routing-ID") == nil)
        return side
    }

    /// A paired tunnel.
    func pair() throws -> (authenticator: EmbeddedConnection, client: EmbeddedConnection) {
        let tunnelID = Relay.randomTunnelID()
        let (authenticator, routingID) = try new(tunnelID)
        return (authenticator, try connect(routingID: routingID, tunnelID: tunnelID))
    }

    /// Runs what every connection's event loop has queued. Work on one connection can queue work on another's
    /// (a close that closes the peer, then the peer's batched flush), so the loops are run in turn a few times.
    func run() {
        for _ in 0..<4 {
            for connection in connections { connection.channel.embeddedEventLoop.run() }
        }
    }

    /// Moves the clock and every connection's timers, then lets the relay's ticker run once.
    func advance(by duration: Duration) {
        clock.advance(by: duration)
        for connection in connections { connection.channel.embeddedEventLoop.advanceTime(by: TimeAmount(duration)) }
        state.perform(state.tick())
        run()
    }

    /// The value of one sample in the metrics text (gauges are written as `1.0`, counters as `1`).
    func metric(_ sample: String) -> Int? { Relay.metric(sample, in: state.metricsText()) }
}

/// One connection of an ``EmbeddedRelay``: bytes in as reads, the relay's answers out as parsed HTTP and frames.
final class EmbeddedConnection {
    let channel: EmbeddedChannel
    private unowned let relay: EmbeddedRelay
    /// Bytes the relay wrote that the test has not parsed yet.
    private var written: ArraySlice<UInt8> = []

    init(channel: EmbeddedChannel, relay: EmbeddedRelay) {
        self.channel = channel
        self.relay = relay
    }

    /// Whether the relay has closed the connection.
    var isClosed: Bool { !channel.isActive }

    /// Bytes from the peer, in one read.
    func send(_ bytes: [UInt8]) throws {
        if channel.isActive { try channel.writeInbound(ByteBuffer(bytes: bytes)) }
        relay.run()
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// The peer disconnects without a close frame.
    func disconnect() {
        _ = try? channel.close().wait()
        relay.run()
    }

    private func collect() throws {
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written += buffer.readableBytesView }
    }

    /// The next HTTP response the relay wrote, if a whole one is there.
    func response() throws -> RawResponse? {
        try collect()
        return RawResponse.parse(&written)
    }

    /// The frames the relay wrote since the last call.
    func frames() throws -> [RawFrame] {
        try collect()
        var frames: [RawFrame] = []
        while let frame = RawFrame.parse(&written) { frames.append(frame) }
        return frames
    }

    /// The close code of the close frame the relay wrote. A close the relay started is answered, as a client
    /// does, and the relay must then have closed the connection; an answer to the peer's close closes it at once.
    func closeCode() throws -> UInt16? {
        let close = try frames().first { $0.opcode == 0x8 }
        if let close, !isClosed { try send(RawFrame.client(opcode: 0x8, close.payload)) }
        #expect(isClosed, "a close frame without closing the connection")
        return close?.closeCode
    }
}
