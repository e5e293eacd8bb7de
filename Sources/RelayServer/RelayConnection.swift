import NIOCore
import NIOWebSocket
import RelayCore

/// One accepted TCP connection, from its HTTP request to its close.
///
/// ``deliver(_:)`` and ``close(code:)`` may be called from any thread: they hop to the channel's event loop,
/// where all of the connection's mutable state lives.
final class RelayConnection: Sendable {
    /// Where a connection is in its life.
    enum Phase {
        /// Waiting for (or answering) the HTTP request.
        case http
        /// The registry accepted the upgrade and the 101 answer is on its way. Messages for this side and a
        /// close wait here until the WebSocket pipeline is in place.
        case upgrading(pending: [[UInt8]], closeCode: UInt16?)
        /// Frames flow.
        case open
        /// A close frame was sent or the channel is closing: nothing more is written.
        case closing
    }

    private struct LoopState {
        var phase = Phase.http
        /// Messages were written but not flushed yet: one flush goes out after the current batch of work.
        var flushScheduled = false
        /// Why the HTTP request is refused, when the upgrade path found out before the fallback handler.
        var refusal: Refusal?
        var requestTimeout: Scheduled<Void>?
        /// The payload of the latest ping not answered yet. Only the latest of several pending pings is
        /// answered (RFC 6455 §5.5.3), once the batch of work in progress is done and the channel is writable.
        var pendingPong: ByteBuffer?
    }

    let id: ConnectionID
    /// The TCP peer's IP address (a trusted proxy's, behind one; see ``AddressRules``).
    let address: String
    let channel: any Channel
    private let loopState: NIOLoopBoundBox<LoopState>

    /// Made on the channel's event loop, in the child channel initializer.
    init(id: ConnectionID, address: String, channel: any Channel) {
        self.id = id
        self.address = address
        self.channel = channel
        loopState = NIOLoopBoundBox(LoopState(), eventLoop: channel.eventLoop)
    }

    // MARK: On the event loop

    /// Closes the connection unless its upgrade request is complete within `timeout`.
    func startRequestTimer(_ timeout: Duration, state: RelayState) {
        let channel = channel
        loopState.value.requestTimeout = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            switch loopState.value.phase {
            case .http, .upgrading:
                // `.upgrading` too: an accepted upgrade request whose body never ends is never upgraded.
                state.refused(.requestTimeout)
                loopState.value.phase = .closing
                channel.close(promise: nil)
            case .open, .closing:
                break
            }
        }
    }

    var phase: Phase { loopState.value.phase }

    /// The refusal noted while the upgrade was being considered (first one wins).
    var refusal: Refusal? {
        get { loopState.value.refusal }
        set { if loopState.value.refusal == nil { loopState.value.refusal = newValue } }
    }

    /// The HTTP request was answered without an upgrade (metrics or a refusal): the connection is closing, and its
    /// request timer must not count it as a timeout later.
    func requestAnswered() {
        loopState.value.requestTimeout?.cancel()
        loopState.value.requestTimeout = nil
        loopState.value.phase = .closing
    }

    /// The registry accepted the upgrade.
    func upgradeAccepted() {
        loopState.value.phase = .upgrading(pending: [], closeCode: nil)
    }

    /// The WebSocket pipeline is in place: what the registry buffered for this side goes out first, then
    /// what arrived during the upgrade.
    func upgradeCompleted(state: RelayState) {
        loopState.value.requestTimeout?.cancel()
        loopState.value.requestTimeout = nil
        guard case .upgrading(let pending, let closeCode) = loopState.value.phase else { return }
        loopState.value.phase = .open
        state.perform(state.joined(self))
        for message in pending { write(message) }
        if let closeCode { close(code: closeCode) }
    }

    /// The peer sent a close frame: answer it (echoing its code) and close the TCP connection.
    func peerSentClose(code: UInt16?) {
        guard case .open = loopState.value.phase else { return }
        loopState.value.phase = .closing
        sendCloseFrame(code: code)
    }

    /// Answers a ping with a pong carrying the same bytes: after the current batch of work, and only while the
    /// channel is writable. A ping that arrives while another is unanswered replaces it, so a peer that pings
    /// without reading makes the relay hold one pong, not one per ping.
    func pong(_ payload: ByteBuffer) {
        guard case .open = loopState.value.phase else { return }
        let alreadyPending = loopState.value.pendingPong != nil
        loopState.value.pendingPong = payload
        guard !alreadyPending else { return }
        channel.eventLoop.execute { [self] in sendPendingPong() }
    }

    /// The channel's writability changed: a pong held back while it was not writable goes out now.
    func writabilityChanged() {
        if channel.isWritable { sendPendingPong() }
    }

    private func sendPendingPong() {
        guard case .open = loopState.value.phase else {
            loopState.value.pendingPong = nil
            return
        }
        guard channel.isWritable, let payload = loopState.value.pendingPong else { return }
        loopState.value.pendingPong = nil
        let frame = WebSocketFrame(fin: true, opcode: .pong, data: payload)
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(frame), promise: nil)
    }

    /// Writes a message; the flush is batched: it runs once the event loop has finished what it is doing
    /// now (the rest of a read, or the other deliveries queued from another loop), so that several messages
    /// for this connection leave in one system call.
    private func write(_ message: [UInt8]) {
        var buffer = channel.allocator.buffer(capacity: message.count)
        buffer.writeBytes(message)
        let frame = WebSocketFrame(fin: true, opcode: .binary, data: buffer)
        channel.pipeline.syncOperations.write(NIOAny(frame), promise: nil)
        guard !loopState.value.flushScheduled else { return }
        loopState.value.flushScheduled = true
        channel.eventLoop.execute { [self] in
            loopState.value.flushScheduled = false
            channel.flush()
        }
    }

    private func sendCloseFrame(code: UInt16?) {
        var buffer = channel.allocator.buffer(capacity: 2)
        if let code { buffer.writeInteger(code) }
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer)
        let channel = channel
        // Close once the frame is out; a peer that never reads is cut off after a second.
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(frame)).whenComplete { _ in
            channel.close(promise: nil)
        }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    // MARK: From any thread

    /// Sends a binary message to this side.
    func deliver(_ message: [UInt8]) {
        if channel.eventLoop.inEventLoop {
            deliverOnLoop(message)
        } else {
            channel.eventLoop.execute { self.deliverOnLoop(message) }
        }
    }

    /// Closes this side with a WebSocket close code (or, before the upgrade, just the TCP connection).
    func close(code: UInt16) {
        if channel.eventLoop.inEventLoop {
            closeOnLoop(code: code)
        } else {
            channel.eventLoop.execute { self.closeOnLoop(code: code) }
        }
    }

    private func deliverOnLoop(_ message: [UInt8]) {
        switch loopState.value.phase {
        case .open:
            write(message)
        case .upgrading(var pending, let closeCode):
            loopState.value.phase = .http  // drop the array's other reference before appending
            pending.append(message)
            loopState.value.phase = .upgrading(pending: pending, closeCode: closeCode)
        case .http, .closing:
            break
        }
    }

    private func closeOnLoop(code: UInt16) {
        switch loopState.value.phase {
        case .http:
            loopState.value.phase = .closing
            channel.close(promise: nil)
        case .upgrading(let pending, _):
            loopState.value.phase = .upgrading(pending: pending, closeCode: code)
        case .open:
            loopState.value.phase = .closing
            sendCloseFrame(code: code)
        case .closing:
            break
        }
    }
}
