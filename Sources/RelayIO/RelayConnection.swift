import NIOCore
import NIOWebSocket
import Relay
import WebSocketMessages

/// One accepted TCP connection, from its HTTP request to its close: the adapter between its channel and a
/// ``RelayConnectionStateMachine``, which decides. What happens to the connection (the request timer, the upgrade,
/// frames, messages and closes from the registry, turns of the event loop) goes in as events; every action that
/// comes out is carried out here, without further decisions.
///
/// ``deliver(_:)`` and ``close(code:)`` may be called from any thread: they hop to the channel's event loop,
/// where the state machine lives. Everything else is called on that loop.
final class RelayConnection: Sendable {
    typealias StateMachine = RelayConnectionStateMachine<ByteBuffer>

    let id: ConnectionID
    /// The TCP peer's IP address (a trusted proxy's, behind one; see ``AddressRules``).
    let address: String
    let channel: any Channel
    private let state: RelayState
    private let loopState: NIOLoopBoundBox<LoopState>

    private struct LoopState {
        var machine: StateMachine
        var requestTimer: Scheduled<Void>?
        var stallTimer: Scheduled<Void>?
        /// Where frames are written once the connection is upgraded (``ServerFrameOutlet``).
        var outlet: ChannelHandlerContext?
    }

    /// Made on the channel's event loop, in the child channel initializer.
    init(id: ConnectionID, address: String, channel: any Channel, state: RelayState) {
        self.id = id
        self.address = address
        self.channel = channel
        self.state = state
        loopState = NIOLoopBoundBox(
            LoopState(machine: StateMachine(maximumOverheadFrames: state.limits.maximumOverheadFrames)),
            eventLoop: channel.eventLoop)
    }

    /// Where the connection is in its life.
    var phase: StateMachine.Phase { loopState.value.machine.phase }

    /// Whether frames from the peer are still read: not once the connection closes or has failed.
    var isReadingFrames: Bool { loopState.value.machine.isReadingFrames }

    // MARK: Events on the event loop

    /// Closes the connection unless its upgrade request is complete within `timeout`.
    func startRequestTimer(_ timeout: Duration) {
        loopState.value.requestTimer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            perform(loopState.value.machine.requestTimerFired())
        }
    }

    /// The HTTP request was answered without an upgrade (metrics or a refusal); the answer closes the connection.
    func requestAnswered() {
        perform(loopState.value.machine.requestAnswered())
    }

    /// NIO's HTTP parser refused the request.
    func requestMalformed() {
        perform(loopState.value.machine.requestMalformed())
    }

    /// The registry accepted the upgrade.
    func upgradeAccepted() {
        loopState.value.machine.upgradeAccepted()
    }

    /// The WebSocket pipeline is in place; frames are written at `outlet`.
    func upgradeCompleted(outlet: ChannelHandlerContext) {
        loopState.value.outlet = outlet
        perform(loopState.value.machine.upgradeCompleted())
    }

    /// A frame from the peer, as the WebSocket handler read it.
    func frameReceived(_ frame: StateMachine.Frame, isOverhead: Bool) {
        perform(loopState.value.machine.frameReceived(frame, isOverhead: isOverhead))
    }

    /// The channel's writability changed: the other side of the tunnel pauses or resumes, and a pong held back
    /// while it was not writable may go out now.
    func writabilityChanged() {
        perform(loopState.value.machine.writabilityChanged(writable: channel.isWritable))
    }

    // MARK: Events from any thread

    /// Sends a binary message to this side.
    func deliver(_ message: ByteBuffer) {
        if channel.eventLoop.inEventLoop {
            perform(loopState.value.machine.deliver(message))
        } else {
            channel.eventLoop.execute { [self] in perform(loopState.value.machine.deliver(message)) }
        }
    }

    /// Stops or resumes reading from this side (its peer does not keep up, or keeps up again).
    func setReading(_ reading: Bool) {
        let channel = channel
        if channel.eventLoop.inEventLoop {
            try? channel.syncOptions?.setOption(.autoRead, value: reading)
        } else {
            channel.eventLoop.execute { try? channel.syncOptions?.setOption(.autoRead, value: reading) }
        }
    }

    /// Closes this side with a WebSocket close code (or, before the upgrade, just the TCP connection).
    func close(code: UInt16) {
        if channel.eventLoop.inEventLoop {
            perform(loopState.value.machine.close(code: code))
        } else {
            channel.eventLoop.execute { [self] in perform(loopState.value.machine.close(code: code)) }
        }
    }

    // MARK: Actions

    private func perform(_ actions: [StateMachine.Action]) {
        for action in actions { perform(action) }
    }

    private func perform(_ action: StateMachine.Action?) {
        guard let action else { return }
        switch action {
        case .cancelRequestTimer:
            loopState.value.requestTimer?.cancel()
            loopState.value.requestTimer = nil
        case .countRequestTimeout:
            state.refused(.requestTimeout)
        case .countMalformedRequest:
            state.refused(.malformedRequest)
        case .closeConnection:
            channel.close(promise: nil)
        case .joinTunnel:
            state.perform(state.joined(self))
        case .write(let message, let scheduleFlush):
            write(opcode: .binary, payload: message)
            guard scheduleFlush else { break }
            // After the rest of the read, or the other deliveries queued from another loop: one system call.
            channel.eventLoop.execute { [self] in perform(loopState.value.machine.flushTurn()) }
        case .flush:
            loopState.value.outlet?.flush()
        case .schedulePong:
            channel.eventLoop.execute { [self] in
                perform(loopState.value.machine.pongTurn(writable: channel.isWritable))
            }
        case .sendPong(let payload):
            write(opcode: .pong, payload: payload)
            loopState.value.outlet?.flush()
        case .sendClose(let code):
            sendCloseFrame(code: code, closeWhenWritten: false)
        case .answerClose(let code):
            sendCloseFrame(code: code, closeWhenWritten: true)
        case .relay(let message):
            state.relay(message, from: self)
        case .fail(let outcome, let code):
            state.perform(state.failed(self, outcome: outcome, code: code))
        case .pausePeer:
            state.peer(of: self)?.setReading(false)
        case .resumePeer:
            state.peer(of: self)?.setReading(true)
        case .armStallTimer:
            loopState.value.stallTimer = channel.eventLoop.scheduleTask(
                in: TimeAmount(state.limits.stalledPeerTimeout)
            ) { [self] in
                perform(loopState.value.machine.stallTimerFired())
            }
        case .cancelStallTimer:
            loopState.value.stallTimer?.cancel()
            loopState.value.stallTimer = nil
        }
    }

    /// Writes a frame (without flushing). The state machine asks for writes only once the connection is upgraded,
    /// when the outlet is set.
    private func write(opcode: WebSocketOpcode, payload: ByteBuffer) {
        guard let outlet = loopState.value.outlet else { return assertionFailure("a write before the upgrade") }
        outlet.write(
            NIOAny(ServerFrame.bytes(opcode: opcode, payload: payload, allocator: channel.allocator)), promise: nil)
    }

    private func sendCloseFrame(code: UInt16?, closeWhenWritten: Bool) {
        var payload = channel.allocator.buffer(capacity: 2)
        if let code { payload.writeInteger(code) }
        let channel = channel
        guard let outlet = loopState.value.outlet else { return assertionFailure("a close frame before the upgrade") }
        // An answer closes once it is out; a close the relay starts waits for the peer's answer. Either way a peer
        // that never reads or answers is cut off after the grace period.
        let frame = ServerFrame.bytes(opcode: .connectionClose, payload: payload, allocator: channel.allocator)
        let written = outlet.writeAndFlush(NIOAny(frame))
        if closeWhenWritten { written.whenComplete { _ in channel.close(promise: nil) } }
        channel.eventLoop.scheduleTask(in: TimeAmount(state.limits.closeGrace)) { channel.close(promise: nil) }
    }

    /// The peer's close frame arrived after the relay's.
    func closeReplyReceived() {
        perform(loopState.value.machine.closeReplyReceived())
    }
}
