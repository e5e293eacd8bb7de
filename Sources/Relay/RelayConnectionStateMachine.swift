/// One relay connection's life, from its HTTP request to its close: events in, actions out. The NIO server
/// translates what happens on the connection into these events and carries out the actions; the tunnel rules
/// between two connections are ``RelayRegistry``'s.
///
/// ```
///  http ──upgradeAccepted──► upgrading ──upgradeCompleted──► open
///    │                          │                              │
///    └── requestAnswered, close, the request timer, a close ───┴──► closing
/// ```
///
/// - **upgrading**: the registry accepted the upgrade and the 101 answer is on its way. Messages for this side,
///   and a close, wait here until the WebSocket pipeline is in place, so nothing overtakes what the registry
///   buffered for this side (delivered at ``Action/joinTunnel``).
/// - **open**: frames flow. Writes are batched: a message is written at once, and the first of a batch asks for
///   one flush after the work in hand (``Action/write(_:scheduleFlush:)``), so several messages leave in one
///   system call. Only the latest of several
///   unanswered pings is answered (RFC 6455 §5.5.3), once the batch is done and the connection is writable, so a
///   peer that pings without reading makes the relay hold one pong. Frames that are not a whole non-empty message
///   in one frame cost work but are neither messages nor activity; past `maximumOverheadFrames` of them the
///   connection fails with 1008. When the relay's writes to this side pile up above the high water mark (the peer
///   does not read), the other side of the tunnel is paused (nothing more is read from it, so the relay holds a
///   bounded number of bytes for this side) and the stall timer runs; once this side is writable again the other
///   side resumes. If the timer fires first, the tunnel ends with 1008 (`peerNotReading`).
/// - **closing**: a close frame was sent or the connection is closing: nothing more is written or read.
///
/// `Bytes` is what messages and pongs carry; the machine only passes it on. The events of every frame and message
/// return at most one action; the rarer ones (the upgrade, the request timer) a list.
public struct RelayConnectionStateMachine<Bytes: Sendable>: Sendable {
    /// What the I/O layer must do, in order.
    public enum Action: Sendable {
        /// Stop the request timer: the request was answered or upgraded.
        case cancelRequestTimer
        /// Count a request that timed out (the `requestTimeout` refusal).
        case countRequestTimeout
        /// Count a request NIO's HTTP parser refused (the `malformedRequest` refusal).
        case countMalformedRequest
        /// Close the TCP connection without a close frame (there is no WebSocket yet).
        case closeConnection
        /// Tell the registry this side is ready; what it holds for this side is delivered before anything else.
        case joinTunnel
        /// Write a binary message, without flushing; with `scheduleFlush`, also call ``flushTurn()`` once the event
        /// loop has finished the work in hand.
        case write(Bytes, scheduleFlush: Bool)
        /// Flush what was written.
        case flush
        /// Call ``pongTurn(writable:)`` once the event loop has finished the work in hand.
        case schedulePong
        /// Write and flush a pong carrying these bytes.
        case sendPong(Bytes)
        /// Write and flush a close frame (with this code, if any) that starts the closing handshake; the connection
        /// is closed when the peer answers (``closeReplyReceived()``), or after a grace period. A peer that reads
        /// the frame together with the end of the stream could lose it (a client still in its upgrade drops what
        /// follows the 101 answer when the stream ends in the same read), so the relay waits for the answer.
        case sendClose(code: UInt16?)
        /// Write and flush a close frame answering the peer's (with this code, if any), then close the connection
        /// once it is out, or after a grace period if the peer does not read it.
        case answerClose(code: UInt16?)
        /// Hand the registry a whole message from this side.
        case relay(Bytes)
        /// Tell the registry this side broke a rule: its tunnel ends with this outcome and close code.
        case fail(TunnelOutcome, code: UInt16)
        /// Stop reading from the other side of the tunnel: this side does not keep up.
        case pausePeer
        /// Read from the other side of the tunnel again.
        case resumePeer
        /// Call ``stallTimerFired()`` after ``RelayLimits/stalledPeerTimeout``.
        case armStallTimer
        /// Stop the stall timer.
        case cancelStallTimer
    }

    /// What a frame from the peer amounted to.
    public enum Frame: Sendable {
        /// A whole binary message.
        case message(Bytes)
        /// A fragment of a message that is not complete yet.
        case fragment
        case ping(Bytes)
        case pong
        /// A close frame, with its code if it had one.
        case close(code: UInt16?)
        /// The frame broke the WebSocket rules: the tunnel ends with this outcome and close code.
        case violation(TunnelOutcome, code: UInt16)
    }

    /// Where the connection is.
    public enum Phase: Hashable, Sendable {
        case http, upgrading, open, closing
    }

    @usableFromInline
    enum State: Sendable {
        case http
        case upgrading(pending: [Bytes], closeCode: UInt16?)
        case open
        case closing
    }

    /// Frames that are not a whole non-empty message in one frame that the peer may send.
    public let maximumOverheadFrames: Int
    @usableFromInline
    var state = State.http
    @usableFromInline
    var overheadFrames = 0
    /// A broken rule was reported: the registry closes the connection, and later frames are ignored.
    @usableFromInline
    var failed = false
    @usableFromInline
    var flushScheduled = false
    /// The payload of the latest ping not answered yet.
    @usableFromInline
    var pendingPong: Bytes?
    /// Writes to this side are above the high water mark: the other side is paused and the stall timer runs.
    @usableFromInline
    var isStalled = false
    /// The relay sent a close frame first and waits for the peer's.
    @usableFromInline
    var awaitingCloseReply = false

    @inlinable
    public init(maximumOverheadFrames: Int) {
        self.maximumOverheadFrames = maximumOverheadFrames
    }

    @inlinable
    public var phase: Phase {
        switch state {
        case .http: .http
        case .upgrading: .upgrading
        case .open: .open
        case .closing: .closing
        }
    }

    /// Whether frames from the peer are still read: the connection is open and has not failed.
    @inlinable
    public var isReadingFrames: Bool {
        guard case .open = state else { return false }
        return !failed
    }

    // MARK: The HTTP stage

    /// The request timer fired: a connection that is not upgraded by now is closed.
    @inlinable
    public mutating func requestTimerFired() -> [Action] {
        switch state {
        case .http, .upgrading:
            // `.upgrading` too: an accepted upgrade request whose body never ends is never upgraded.
            state = .closing
            return [.countRequestTimeout, .closeConnection]
        case .open, .closing:
            return []
        }
    }

    /// NIO's HTTP parser refused the request (and answered 400): counted and closed. A request the timer cut off
    /// is incomplete when the connection closes, which the parser reports too: that is not counted again.
    @inlinable
    public mutating func requestMalformed() -> [Action] {
        switch state {
        case .http, .upgrading:
            state = .closing
            return [.countMalformedRequest, .closeConnection]
        case .open, .closing:
            return []
        }
    }

    /// The request was answered without an upgrade (metrics or a refusal); the answer closes the connection.
    @inlinable
    public mutating func requestAnswered() -> Action {
        state = .closing
        return .cancelRequestTimer
    }

    /// The registry accepted the upgrade.
    @inlinable
    public mutating func upgradeAccepted() {
        guard case .http = state else { return }
        state = .upgrading(pending: [], closeCode: nil)
    }

    /// The WebSocket pipeline is in place: the registry's buffer for this side goes out first, then what arrived
    /// during the upgrade, then a close that arrived during it.
    @inlinable
    public mutating func upgradeCompleted() -> [Action] {
        guard case .upgrading(let pending, let closeCode) = state else { return [.cancelRequestTimer] }
        state = .open
        var actions: [Action] = [.cancelRequestTimer, .joinTunnel]
        for message in pending { actions.append(write(message)) }
        if let closeCode, let close = close(code: closeCode) { actions.append(close) }
        return actions
    }

    // MARK: From the registry

    /// A message for this side.
    @inlinable
    public mutating func deliver(_ message: Bytes) -> Action? {
        switch state {
        case .open:
            return write(message)
        case .upgrading(var pending, let closeCode):
            state = .closing  // drop the array's other reference before appending
            pending.append(message)
            state = .upgrading(pending: pending, closeCode: closeCode)
            return nil
        case .http, .closing:
            return nil
        }
    }

    /// Close this side with a WebSocket close code (before the upgrade, just the TCP connection).
    @inlinable
    public mutating func close(code: UInt16) -> Action? {
        switch state {
        case .http:
            state = .closing
            return .closeConnection
        case .upgrading(let pending, _):
            state = .upgrading(pending: pending, closeCode: code)
            return nil
        case .open:
            state = .closing
            awaitingCloseReply = true
            return .sendClose(code: code)
        case .closing:
            return nil
        }
    }

    /// A close frame arrived after the relay sent its own: the closing handshake is complete.
    @inlinable
    public mutating func closeReplyReceived() -> Action? {
        guard case .closing = state, awaitingCloseReply else { return nil }
        awaitingCloseReply = false
        return .closeConnection
    }

    // MARK: From the peer

    /// A frame from the peer; `isOverhead` when it is not a whole non-empty message in one frame.
    @inlinable
    public mutating func frameReceived(_ frame: Frame, isOverhead: Bool) -> Action? {
        guard case .open = state, !failed else { return nil }
        if isOverhead {
            overheadFrames += 1
            guard overheadFrames <= maximumOverheadFrames else { return fail(.tooManyOverheadFrames, code: 1008) }
        }
        switch frame {
        case .message(let bytes):
            return .relay(bytes)
        case .fragment, .pong:
            return nil
        case .ping(let payload):
            let alreadyPending = pendingPong != nil
            pendingPong = payload
            return alreadyPending ? nil : .schedulePong
        case .close(let code):
            // Echo the peer's code, then close.
            state = .closing
            return .answerClose(code: code)
        case .violation(let outcome, let code):
            return fail(outcome, code: code)
        }
    }

    // MARK: Turns of the event loop

    /// The flush scheduled by ``Action/scheduleFlush``.
    @inlinable
    public mutating func flushTurn() -> Action {
        flushScheduled = false
        return .flush
    }

    /// The turn scheduled by ``Action/schedulePong``, or a change of writability: the pending pong goes out
    /// when the connection is open and writable.
    @inlinable
    public mutating func pongTurn(writable: Bool) -> Action? {
        guard case .open = state else {
            pendingPong = nil
            return nil
        }
        guard writable, let payload = pendingPong else { return nil }
        pendingPong = nil
        return .sendPong(payload)
    }

    /// The connection became writable or stopped being writable (NIO's high water mark): pause or resume the
    /// other side, arm or cancel the stall timer, and let a held pong go out.
    @inlinable
    public mutating func writabilityChanged(writable: Bool) -> [Action] {
        var actions: [Action] = []
        if case .open = state, !writable, !isStalled {
            isStalled = true
            actions = [.pausePeer, .armStallTimer]
        } else if writable, isStalled {
            isStalled = false
            actions = [.resumePeer, .cancelStallTimer]
        }
        if let pong = pongTurn(writable: writable) { actions.append(pong) }
        return actions
    }

    /// The stall timer fired: a side that is still not reading ends its tunnel.
    @inlinable
    public mutating func stallTimerFired() -> Action? {
        guard case .open = state, isStalled, !failed else { return nil }
        return fail(.peerNotReading, code: 1008)
    }

    // MARK: Helpers

    @inlinable
    mutating func write(_ message: Bytes) -> Action {
        defer { flushScheduled = true }
        return .write(message, scheduleFlush: !flushScheduled)
    }

    @inlinable
    mutating func fail(_ outcome: TunnelOutcome, code: UInt16) -> Action {
        failed = true
        return .fail(outcome, code: code)
    }
}

extension RelayConnectionStateMachine.Action: Equatable where Bytes: Equatable {}
extension RelayConnectionStateMachine.Action: Hashable where Bytes: Hashable {}
