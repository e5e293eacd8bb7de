import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Relay
import TestSupport
import Testing

@testable import RelayIO

/// Counts the reads that reach the socket, i.e. that no handler withheld.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    private(set) var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// One upgraded `/cable/new` connection in an `EmbeddedChannel`, with the handlers `RelayServer` gives it.
struct EmbeddedRelaySide {
    let channel: EmbeddedChannel
    let state: RelayState
    let readCounter = ReadCounter()

    init(limits: RelayLimits = RelayLimits()) throws {
        let channel = EmbeddedChannel()
        let state = RelayState(
            limits: limits, routingID: EmbeddedRelay.routingID, logger: Logger(label: "relay.test"))
        self.channel = channel
        self.state = state
        try channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 4000)).wait()
        let connection = try #require(
            state.accept(address: "192.0.2.1") {
                RelayConnection(id: $0, address: "192.0.2.1", channel: channel, state: state)
            })
        let decision = state.upgrade(
            connection, path: "/cable/new/" + String(repeating: "AB", count: 16), subprotocols: ["fido.cable"])
        guard case .accept = decision else { throw ClientError("upgrade refused: \(decision)") }
        connection.upgradeAccepted()
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(readCounter)
        try RelayServer.addConnectionHandlers(to: pipeline)
        try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: limits.maximumMessageBytes)))
        try pipeline.addHandler(WebSocketFrameEncoder())
        try RelayServer.completeUpgrade(
            of: connection, pipeline: pipeline, maximumMessageBytes: limits.maximumMessageBytes)
    }

    /// The peer's socket buffer fills (it stops reading) or drains.
    func setWritable(_ writable: Bool) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.run()
    }

    /// Client frames arriving in one read.
    func receive(_ bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        channel.embeddedEventLoop.run()
    }

    /// Every byte the relay has written to the socket so far.
    func written() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
        return bytes
    }

    /// A masked ping whose payload is the big-endian `number`.
    static func ping(_ number: UInt32) -> [UInt8] {
        RawFrame.client(
            opcode: 0x9,
            [UInt8(number >> 24), UInt8(number >> 16 & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)])
    }
}

/// Issue 10: a peer that pings without reading, or floods control and empty frames, is bounded.
struct RelayBackPressureTests {
    /// No budget in the way: what bounds the relay here is the back-pressure and the one pending pong.
    static let unlimitedOverhead: RelayLimits = {
        var limits = RelayLimits()
        limits.maximumOverheadFrames = .max
        return limits
    }()

    @Test func aPeerThatPings100000TimesWithoutReadingLeavesOnePongQueued() throws {
        let side = try EmbeddedRelaySide(limits: Self.unlimitedOverhead)
        side.setWritable(false)
        let readsBefore = side.readCounter.reads
        for batch in 0..<100 {
            try side.receive((0..<1000).flatMap { EmbeddedRelaySide.ping(UInt32(batch * 1000 + $0)) })
            side.channel.read()  // what autoRead asks for after each read: withheld while not writable
        }
        #expect(try side.written().isEmpty)
        #expect(side.readCounter.reads == readsBefore)

        side.setWritable(true)
        let frames = RawFrame.frames(in: try side.written())
        #expect(frames == [RawFrame(fin: true, opcode: 0xA, masked: false, payload: [0x00, 0x01, 0x86, 0x9F])])
        #expect(side.readCounter.reads == readsBefore + 1)  // reading resumes
    }

    @Test func manyPingsInOneReadAreAnsweredWithOnePongForTheLatest() throws {
        let side = try EmbeddedRelaySide(limits: Self.unlimitedOverhead)
        try side.receive((1...1000).flatMap { EmbeddedRelaySide.ping($0) })
        let frames = RawFrame.frames(in: try side.written())
        #expect(frames == [RawFrame(fin: true, opcode: 0xA, masked: false, payload: [0, 0, 0x03, 0xE8])])
        // A later ping is answered on its own.
        try side.receive(EmbeddedRelaySide.ping(7))
        #expect(RawFrame.frames(in: try side.written()).map(\.payload) == [[0, 0, 0, 7]])
    }

    static let floods: [(String, [UInt8])] = [
        ("ping", RawFrame.client(opcode: 0x9, [])),
        ("pong", RawFrame.client(opcode: 0xA, [1])),
        ("empty binary message", RawFrame.client(opcode: 0x2, [])),
        ("empty continuation", RawFrame.client(opcode: 0x0, [], fin: false)),
        ("one-byte continuation", RawFrame.client(opcode: 0x0, [1], fin: false)),
    ]

    @Test(arguments: floods)
    func aFloodOfOverheadFramesClosesTheConnectionAtTheBudget(name: String, frame: [UInt8]) throws {
        var limits = RelayLimits()
        limits.maximumOverheadFrames = 100
        limits.maximumMessagesPerSide = .max
        limits.maximumBufferedBytes = .max
        let side = try EmbeddedRelaySide(limits: limits)
        // A message is started first, so continuations have something to continue (1 overhead frame).
        try side.receive(RawFrame.client(opcode: 0x2, [9], fin: false))
        let flood = name.contains("continuation") ? frame : RawFrame.client(opcode: 0x0, [], fin: true) + frame
        try side.receive(flood)  // ends the message first where needed: 3 overhead frames, or 2
        try side.receive(Array([[UInt8]](repeating: frame, count: 97).joined()))  // 100 in all: the budget
        let before = RawFrame.frames(in: try side.written())
        #expect(!before.contains { $0.opcode == 0x8 }, "\(name): closed within the budget")

        try side.receive(Array([[UInt8]](repeating: frame, count: 10_000).joined()))
        let after = RawFrame.frames(in: try side.written())
        #expect(after.filter { $0.opcode == 0x8 }.map(\.closeCode) == [1008], "\(name)")
        #expect(side.state.metricsText().contains("relay_tunnels_closed_total{outcome=\"tooManyOverheadFrames\"} 1"))
    }

    @Test func wholeMessagesDoNotCountAgainstTheBudget() throws {
        var limits = RelayLimits()
        limits.maximumOverheadFrames = 2
        limits.maximumMessagesPerSide = 100
        limits.maximumBufferedBytes = .max
        let side = try EmbeddedRelaySide(limits: limits)
        try side.receive((0..<50).flatMap { RawFrame.clientBinary([UInt8($0)]) } + RawFrame.client(opcode: 0x9, []))
        try side.receive(RawFrame.client(opcode: 0x9, []))
        #expect(RawFrame.frames(in: try side.written()).map(\.opcode) == [0xA, 0xA])
    }
}
