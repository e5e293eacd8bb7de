import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Relay
import Testing
import TestSupport

@testable import RelayIO

/// Holds every write (a peer whose socket takes nothing) and counts flushes. Each write must be one whole frame.
final class WriteRecorder: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    var holdsWrites = false
    private(set) var frames: [RawFrame] = []
    /// Writes that were not exactly one frame.
    private(set) var malformedWrites = 0
    private(set) var flushes = 0
    private var held: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let written = RawFrame.frames(in: Array(Self.unwrapOutboundIn(data).readableBytesView))
        if written.count == 1 { frames += written } else { malformedWrites += 1 }
        if holdsWrites {
            if let promise { held.append(promise) }
        } else {
            promise?.succeed()
        }
    }

    func flush(context: ChannelHandlerContext) { flushes += 1 }

    /// Writes held when the connection closes fail, as a socket's pending writes do.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        for promise in held { promise.fail(ChannelError.ioOnClosedChannel) }
        held = []
        context.close(mode: mode, promise: promise)
    }
}

/// The connection adapter in `EmbeddedChannel`: what it writes, when it flushes and closes, for the actions of its
/// state machine. The registry beside it is real. The connection writes at an outlet in front of the recorder, as
/// it does in front of NIO's encoder on a socket.
struct RelayConnectionTests {
    let channel = EmbeddedChannel()
    let recorder = WriteRecorder()
    let outlet = ServerFrameOutlet()
    let state = RelayState(
        limits: RelayLimits(), routingID: EmbeddedRelay.routingID, logger: Logger(label: "relay.test"))
    let connection: RelayConnection

    init() throws {
        try channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 4000)).wait()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.pipeline.syncOperations.addHandler(outlet)
        let (channel, state) = (channel, state)
        connection = try #require(
            state.accept(address: "192.0.2.1") {
                RelayConnection(id: $0, address: "192.0.2.1", channel: channel, state: state)
            })
    }

    func upgrade(path: String = "/cable/new/" + String(repeating: "AB", count: 16)) throws {
        guard case .accept = state.upgrade(connection, path: path, subprotocols: ["fido.cable"]) else {
            throw ClientError("upgrade refused")
        }
        connection.upgradeAccepted()
    }

    func completeUpgrade(_ connection: RelayConnection? = nil, channel: EmbeddedChannel? = nil) throws {
        let channel = channel ?? self.channel
        (connection ?? self.connection).upgradeCompleted(
            outlet: try channel.pipeline.syncOperations.context(handlerType: ServerFrameOutlet.self))
    }

    @Test func messagesOfOneTurnAreFlushedOnce() throws {
        try upgrade()
        try completeUpgrade()
        for byte in [1, 2, 3] as [UInt8] { connection.deliver(ByteBuffer(bytes: [byte])) }
        #expect(recorder.frames.map(\.payload) == [[1], [2], [3]])
        #expect(recorder.flushes == 0)
        channel.embeddedEventLoop.run()
        #expect(recorder.flushes == 1)
        connection.deliver(ByteBuffer(bytes: [4]))
        channel.embeddedEventLoop.run()
        #expect(recorder.flushes == 2)
        #expect(recorder.frames.allSatisfy { $0.opcode == 0x2 && $0.fin && !$0.masked })
        #expect(recorder.malformedWrites == 0)
    }

    @Test func whatArrivesDuringTheUpgradeWaitsForThePipeline() throws {
        try upgrade()
        connection.deliver(ByteBuffer(bytes: [1]))
        connection.close(code: 1001)
        #expect(recorder.frames.isEmpty && channel.isActive)
        #expect(connection.phase == .upgrading)
        try completeUpgrade()
        #expect(recorder.frames.map(\.opcode) == [0x2, 0x8])
        #expect(recorder.frames.last?.closeCode == 1001)
        // The relay started the close: the connection ends when the peer answers.
        #expect(channel.isActive)
        connection.closeReplyReceived()
        #expect(!channel.isActive)
    }

    @Test func aPeerThatDoesNotReadTheCloseFrameIsCutOffAfterTheGrace() throws {
        try upgrade()
        try completeUpgrade()
        recorder.holdsWrites = true
        connection.close(code: 1000)
        #expect(recorder.frames.last?.opcode == 0x8)
        channel.embeddedEventLoop.advanceTime(by: TimeAmount(RelayLimits().closeGrace) - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func theRequestTimerClosesAConnectionWhoseUpgradeNeverCompletes() throws {
        connection.startRequestTimer(.seconds(10))
        try upgrade()
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
        #expect(recorder.frames.isEmpty)  // no WebSocket yet: no close frame
        #expect(state.metricsText().contains("relay_rejections_total{reason=\"requestTimeout\"} 1\n"))
    }

    @Test func aCompletedUpgradeStopsTheRequestTimer() throws {
        connection.startRequestTimer(.seconds(10))
        try upgrade()
        try completeUpgrade()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        #expect(connection.phase == .open)
    }

    @Test func theClientSideGetsTheRegistrysBufferBeforeAnythingElse() throws {
        // The authenticator side of the same tunnel, on its own channel.
        let authenticatorChannel = EmbeddedChannel()
        try authenticatorChannel.connect(to: SocketAddress(ipAddress: "198.51.100.1", port: 4000)).wait()
        let state = state
        let authenticator = try #require(
            state.accept(address: "198.51.100.1") {
                RelayConnection(id: $0, address: "198.51.100.1", channel: authenticatorChannel, state: state)
            })
        let tunnelID = String(repeating: "CD", count: 16)
        guard
            case .accept(_, let routingID?) = state.upgrade(
                authenticator, path: "/cable/new/\(tunnelID)", subprotocols: ["fido.cable"])
        else { throw ClientError("upgrade refused") }
        authenticator.upgradeAccepted()
        try authenticatorChannel.pipeline.syncOperations.addHandler(ServerFrameOutlet())
        try completeUpgrade(authenticator, channel: authenticatorChannel)
        authenticator.frameReceived(.message(ByteBuffer(bytes: [1])), isOverhead: false)  // buffered by the registry

        try upgrade(path: "/cable/connect/\(routingID)/\(tunnelID)")
        authenticator.frameReceived(.message(ByteBuffer(bytes: [2])), isOverhead: false)  // waits in the connection
        try completeUpgrade()
        authenticator.frameReceived(.message(ByteBuffer(bytes: [3])), isOverhead: false)
        #expect(recorder.frames.map(\.payload) == [[1], [2], [3]])
    }
}
