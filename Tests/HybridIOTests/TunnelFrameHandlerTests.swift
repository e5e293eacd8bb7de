import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import TestSupport
import Testing
import WebSocketMessages

@testable import HybridIO

/// A tunnel whose upgraded channel is a `NIOAsyncTestingChannel`: the relay's frames are written in as bytes, and
/// what the client sends is read back as bytes. No sockets, and no waiting for the network.
final class EmbeddedTunnel {
    let channel: NIOAsyncTestingChannel
    let tunnel: TunnelConnection
    /// Bytes the client wrote that no frame took yet (NIO's encoder writes a frame's header and payload apart).
    private var written: [UInt8] = []

    /// `socket`, when given, sits where the socket would: it sees every byte the client writes.
    init(socket: WriteHolder? = nil) async throws {
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 443))
        let budget = TunnelConnection.makeBudget()
        // What NIO's client upgrader puts in place, then the tunnel's own handlers.
        let asyncChannel = try await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            if let socket { try pipeline.addHandler(socket) }
            try pipeline.addHandler(WebSocketFrameEncoder())
            try pipeline.addHandler(
                ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: TunnelConnection.maximumMessageBytes)))
            return try TunnelConnection.configureUpgradedPipeline(channel, budget: budget)
        }.get()
        self.channel = channel
        tunnel = await TunnelConnection(asyncChannel, budget: budget, routingIDHeader: nil)
    }

    /// Bytes from the relay, in one read. Returns the error the tunnel raised, if any.
    @discardableResult
    func relaySends(_ bytes: [UInt8]) async -> (any Error)? {
        do {
            try await channel.writeInbound(ByteBuffer(bytes: bytes))
            return nil
        } catch {
            return error
        }
    }

    /// The next frame the client wrote, waiting for it.
    func clientFrame() async throws -> TunnelConnectionTests.ClientFrame {
        while true {
            var rest = written[...]
            if let frame = RawFrame.parse(&rest) {
                written = Array(rest)
                try #require(frame.masked, "client frames must be masked")
                return TunnelConnectionTests.ClientFrame(opcode: frame.opcode, payload: frame.payload)
            }
            written += try await channel.waitForOutboundWrite(as: ByteBuffer.self).readableBytesView
        }
    }

    /// Frames the client wrote and nobody read yet.
    func writtenFrames() async throws -> [TunnelConnectionTests.ClientFrame] {
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) { written += buffer.readableBytesView }
        defer { written = [] }
        return try TunnelConnectionTests.parseClientFrames(written)
    }

    func receive() async throws(TunnelError) -> [UInt8]? {
        try await tunnel.receive(timeout: .seconds(10), waitingFor: "a test message")
    }
}

/// A socket that takes nothing: writes stay pending (a relay that does not read).
final class WriteHolder: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = ByteBuffer
    private let held = Mutex(0)

    var heldWrites: Int { held.withLock { $0 } }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        held.withLock { $0 += 1 }  // the promise is never completed
    }
}

/// Server frames, unmasked unless asked.

/// The tunnel client's frame handling in `NIOAsyncTestingChannel`.
struct TunnelFrameHandlerTests {
    @Test func messagesPingsAndFragmentsArriveInOrder() async throws {
        let embedded = try await EmbeddedTunnel()
        await embedded.relaySends(
            RawFrame.server(opcode: 2, [1], fin: false) + RawFrame.server(opcode: 9, [7, 7])
                + RawFrame.server(opcode: 0, [2], fin: false) + RawFrame.server(opcode: 0xA, [8])
                + RawFrame.server(opcode: 0, [3]) + RawFrame.server(opcode: 2, []))
        // The ping between the fragments is answered with a masked pong carrying its bytes.
        let pong = try await embedded.clientFrame()
        #expect(pong.opcode == 0xA && pong.payload == [7, 7])
        #expect(try await embedded.receive() == [1, 2, 3])
        #expect(try await embedded.receive() == [])
        try await embedded.tunnel.send([0xAA])
        let sent = try await embedded.clientFrame()
        #expect(sent.opcode == 0x2 && sent.payload == [0xAA])
    }

    /// A hostile frame, the error it raises and the close code the client answers with.
    struct Hostile: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var error: TunnelError
        var closeCode: [UInt8]
        var testDescription: String { name }

        init(_ name: String, _ bytes: [UInt8], _ error: TunnelError, _ closeCode: [UInt8]) {
            (self.name, self.bytes, self.error, self.closeCode) = (name, bytes, error, closeCode)
        }
    }

    static let hostile: [Hostile] = [
        Hostile(
            "text", RawFrame.server(opcode: 1, Array("hi".utf8)), .protocolViolation(.textFrame), [3, 0xEB]),
        Hostile(
            "masked", RawFrame.server(opcode: 2, [1], masked: true), .protocolViolation(.maskedFrame),
            [3, 0xEA]),
        Hostile("reserved bit", [0xC2, 0x01, 0x05], .protocolViolation(.reservedBit), [3, 0xEA]),
        Hostile("reserved opcode", [0x83, 0x00], .protocolViolation(.reservedOpcode(3)), [3, 0xEA]),
        Hostile(
            "stray continuation", RawFrame.server(opcode: 0, [1]),
            .protocolViolation(.continuationWithoutMessage), [3, 0xEA]),
        Hostile(
            "new message inside a fragmented one",
            RawFrame.server(opcode: 2, [1], fin: false) + RawFrame.server(opcode: 2, [2]),
            .protocolViolation(.messageInterrupted), [3, 0xEA]),
        Hostile("fragmented ping", [0x09, 0x00], .protocolViolation(.malformedControlFrame), [3, 0xEA]),
        Hostile(
            "oversize header", [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 1], .protocolViolation(.messageTooLarge), [3, 0xF1]),
        Hostile(
            "oversize fragments",
            RawFrame.server(opcode: 2, Array(repeating: 1, count: 40_000), fin: false)
                + RawFrame.server(opcode: 0, Array(repeating: 2, count: 40_000)),
            .protocolViolation(.messageTooLarge), [3, 0xF1]),
    ]

    @Test(arguments: hostile)
    func hostileFramesEndTheTunnelWithTheirReasonAndCloseCode(_ hostile: Hostile) async throws {
        let embedded = try await EmbeddedTunnel()
        // A message before the hostile bytes is still delivered, then the error, and the error again.
        let raised = await embedded.relaySends(RawFrame.server(opcode: 2, [42]) + hostile.bytes)
        #expect(raised as? TunnelError == hostile.error)
        #expect(try await embedded.receive() == [42])
        await #expect(throws: hostile.error) { try await embedded.receive() }
        await #expect(throws: hostile.error) { try await embedded.receive() }
        let close = try await embedded.clientFrame()
        #expect(close.opcode == 0x8 && close.payload == hostile.closeCode)
        try await embedded.channel.closeFuture.get()
        // Nothing more is sent: one close frame only.
        #expect(try await embedded.writtenFrames().isEmpty)
        await embedded.tunnel.close()
    }

    @Test func aFloodOfUnreadMessagesEndsTheTunnelWith1008AfterTheQueuedOnes() async throws {
        let embedded = try await EmbeddedTunnel()
        let limit = TunnelConnection.maximumQueuedMessages
        // Reading some first makes room for as many more.
        await embedded.relaySends((0..<10).flatMap { RawFrame.server(opcode: 2, [UInt8($0)]) })
        for index in 0..<10 { #expect(try await embedded.receive() == [UInt8(index)]) }
        let raised = await embedded.relaySends(
            (0...limit).flatMap { RawFrame.server(opcode: 2, [UInt8(truncatingIfNeeded: $0 + 100)]) })
        #expect(raised as? TunnelError == .tooManyUnreadMessages)
        let close = try await embedded.clientFrame()
        #expect(close.opcode == 0x8 && close.payload == [0x03, 0xF0])
        for index in 0..<limit { #expect(try await embedded.receive() == [UInt8(truncatingIfNeeded: index + 100)]) }
        await #expect(throws: TunnelError.tooManyUnreadMessages) { try await embedded.receive() }
    }

    @Test func theByteLimitCountsUnreadBytes() async throws {
        let embedded = try await EmbeddedTunnel()
        let size = TunnelConnection.maximumMessageBytes
        let fits = TunnelConnection.maximumQueuedBytes / size
        for index in 0..<fits {
            #expect(
                await embedded.relaySends(
                    RawFrame.server(opcode: 2, Array(repeating: UInt8(index), count: size))) == nil)
        }
        // One byte more than the limit.
        let raised = await embedded.relaySends(RawFrame.server(opcode: 2, [1]))
        #expect(raised as? TunnelError == .tooManyUnreadMessages)
        #expect(try await embedded.clientFrame().payload == [0x03, 0xF0])
        #expect(try await embedded.receive()?.count == size)
    }

    @Test func aCloseFromTheRelayIsAnsweredAndEndsReceivingCleanly() async throws {
        let embedded = try await EmbeddedTunnel()
        await embedded.relaySends(
            RawFrame.server(opcode: 2, [1]) + RawFrame.server(opcode: 8, [0x0F, 0xA0]))
        let answer = try await embedded.clientFrame()
        #expect(answer.opcode == 0x8 && answer.payload == [0x03, 0xE8])
        try await embedded.channel.closeFuture.get()
        #expect(try await embedded.receive() == [1])
        #expect(try await embedded.receive() == nil)
        #expect(try await embedded.receive() == nil)
        // Sending on a closed tunnel fails with a reason.
        await #expect(throws: TunnelError.connectionFailed(.closed)) { try await embedded.tunnel.send([1]) }
    }

    @Test func aWakeChannelCloseCodeReachesTheReaderAfterTheMessages() async throws {
        // 4404 (0x1134): the relay's "no phone answered the wake"; other codes end the tunnel cleanly (above).
        let embedded = try await EmbeddedTunnel()
        await embedded.relaySends(
            RawFrame.server(opcode: 2, [1]) + RawFrame.server(opcode: 8, [0x11, 0x34]))
        let answer = try await embedded.clientFrame()
        #expect(answer.opcode == 0x8 && answer.payload == [0x03, 0xE8])
        #expect(try await embedded.receive() == [1])
        await #expect(throws: TunnelError.closedByRelay(code: 4404)) { try await embedded.receive() }
    }

    @Test func aHalfCloseEndsReceivingAfterTheMessagesBeforeIt() async throws {
        let embedded = try await EmbeddedTunnel()
        await embedded.relaySends(RawFrame.server(opcode: 2, [5]))
        embedded.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try await embedded.receive() == [5])
        #expect(try await embedded.receive() == nil)
    }

    @Test func closingSendsOneCloseFrameWithTheCodeAndClosesTheChannel() async throws {
        let embedded = try await EmbeddedTunnel()
        await embedded.tunnel.close(code: .goingAway)
        #expect(try await embedded.writtenFrames().map(\.payload) == [[0x03, 0xE9]])
        #expect(!embedded.channel.isActive)
        await embedded.tunnel.close()  // again: nothing
        #expect(try await embedded.writtenFrames().isEmpty)
    }

    /// Issue 23, attack 11: the client answered every ping, so a relay that sends pings and reads nothing made it
    /// queue one pong a ping. Now one pong is on its way at a time, and the latest ping is answered after it.
    @Test func pingsFromARelayThatDoesNotReadQueueOnePong() async throws {
        let socket = WriteHolder()
        let embedded = try await EmbeddedTunnel(socket: socket)
        var pings: [UInt8] = []
        for number in 0..<1000 { pings += RawFrame.server(opcode: 9, [UInt8(number % 256)]) }
        await embedded.relaySends(pings)
        #expect(socket.heldWrites >= 1)
        #expect(socket.heldWrites <= 2, "one pong frame (its header and payload) is held, not one a ping")
        // A relay that reads gets a pong for the first ping and one for the latest.
        let reading = try await EmbeddedTunnel()
        await reading.relaySends(RawFrame.server(opcode: 9, [1]) + RawFrame.server(opcode: 9, [2]))
        let frames = try await reading.writtenFrames()
        #expect(frames.map(\.opcode) == [0xA, 0xA])
        #expect(frames.map(\.payload) == [[1], [2]])
    }

    @Test func aRelayThatDoesNotReadTheCloseFrameIsCutOffAfterAGrace() async throws {
        let socket = WriteHolder()
        let embedded = try await EmbeddedTunnel(socket: socket)
        let tunnel = embedded.tunnel
        let closing = Task { await tunnel.close() }
        while socket.heldWrites == 0 { await Task.yield() }  // the close frame is stuck in the socket
        await embedded.channel.testingEventLoop.advanceTime(by: TunnelFrameHandler.closeGrace - .milliseconds(1))
        #expect(embedded.channel.isActive)
        await embedded.channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        await closing.value
        #expect(!embedded.channel.isActive)
    }

    /// The receive's time limit runs on the channel's event loop, here the test's clock.
    @Test func aTimedOutReceiveLeavesTheTunnelUsable() async throws {
        let embedded = try await EmbeddedTunnel()
        let tunnel = embedded.tunnel
        let waiting = Task { try await tunnel.receive(timeout: .milliseconds(20), waitingFor: "waiting for nothing") }
        while await !embedded.tunnel.isReceiving { await Task.yield() }
        await embedded.channel.testingEventLoop.advanceTime(by: .milliseconds(19))
        #expect(await embedded.tunnel.isReceiving)
        await embedded.channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        await #expect(throws: TunnelError.timedOut("waiting for nothing")) { try await waiting.value }
        await embedded.relaySends(RawFrame.server(opcode: 2, [3]))
        #expect(try await embedded.receive() == [3])
    }

    /// A link whose session has no timer armed receives with no time limit: a message or the end ends the wait.
    @Test func aReceiveWithoutATimeoutWaitsForTheMessage() async throws {
        let embedded = try await EmbeddedTunnel()
        let tunnel = embedded.tunnel
        let waiting = Task { try await tunnel.receive(timeout: nil, waitingFor: "no timer") }
        while await !embedded.tunnel.isReceiving { await Task.yield() }
        await embedded.relaySends(RawFrame.server(opcode: 2, [7]))
        #expect(try await waiting.value == [7])
        await embedded.relaySends(RawFrame.server(opcode: 8, [0x03, 0xE8]))
        #expect(try await embedded.tunnel.receive(timeout: nil, waitingFor: "no timer") == nil)
    }

    @Test func cancellingAReceiveEndsTheTunnelWith1001() async throws {
        let embedded = try await EmbeddedTunnel()
        let tunnel = embedded.tunnel
        let waiting = Task { try await tunnel.receive(timeout: .seconds(60), waitingFor: "waiting long") }
        while await !embedded.tunnel.isReceiving { await Task.yield() }
        waiting.cancel()
        await #expect(throws: TunnelError.cancelled("waiting long")) { try await waiting.value }
        let close = try await embedded.clientFrame()
        #expect(close.opcode == 0x8 && close.payload == [0x03, 0xE9])
        await #expect(throws: TunnelError.cancelled("waiting long")) { try await embedded.receive() }
    }

    @Test func twoReceivesAtOnceAreRefused() async throws {
        let embedded = try await EmbeddedTunnel()
        let tunnel = embedded.tunnel
        let first = Task { try await tunnel.receive(timeout: .seconds(60), waitingFor: "first") }
        while await !embedded.tunnel.isReceiving { await Task.yield() }
        await #expect(throws: TunnelError.concurrentReceive) {
            try await embedded.tunnel.receive(timeout: .seconds(60), waitingFor: "second")
        }
        await embedded.relaySends(RawFrame.server(opcode: 2, [6]))
        #expect(try await first.value == [6])
    }
}
