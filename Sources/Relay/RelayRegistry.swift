import Hybrid

/// Limits of the relay, all configurable from `passkey-relay`'s flags.
public struct RelayLimits: Hashable, Sendable {
    /// A tunnel is closed this long after its authenticator side registered it (webauthn-rs: 120 s).
    public var tunnelLifetime = Duration.seconds(120)
    /// A tunnel with no message in either direction for this long is closed.
    public var idleTimeout = Duration.seconds(60)
    /// The largest binary message relayed (webauthn-rs: 16 KiB).
    public var maximumMessageBytes = 16 * 1024
    /// The most messages one side may send over a tunnel's life (webauthn-rs: 16).
    public var maximumMessagesPerSide = 16
    /// Bytes held for a peer that has not joined yet.
    public var maximumBufferedBytes = 64 * 1024
    /// Tunnels open at once.
    public var maximumTunnels = 1024
    /// WebSocket connections open at once from one source address (one network of ``AddressRules``: an IPv4
    /// /24 or IPv6 /64 by default); separately, connections from one address still in the HTTP stage.
    public var maximumConnectionsPerAddress = 16
    /// The share of ``maximumTunnels``, in percent, kept for addresses that hold no tunnel yet (default 25).
    /// Once the other tunnels are taken, `/cable/new` is only accepted from an address (network) that has
    /// none open, so many addresses that each hold several tunnels cannot take the last ones.
    public var reservedTunnelPercent = 25
    /// Connections still in the HTTP stage (TLS handshake and upgrade request), from all addresses together.
    public var maximumPendingConnections = 1024
    /// Frames one WebSocket connection may send that are not a whole non-empty message in one frame: pings,
    /// pongs, fragments and empty frames. Past it the tunnel is closed with 1008.
    public var maximumOverheadFrames = 1024
    /// A side that does not read what the relay writes to it: once the relay's writes to it pile up above the
    /// connection's high water mark, the relay stops reading from the other side (so it holds a bounded number of
    /// bytes for it); if the side is still not reading after this long, the tunnel ends with 1008 (outcome
    /// `peerNotReading`).
    public var stalledPeerTimeout = Duration.seconds(10)
    /// How long a connection that was sent a close frame may take to answer it (RFC 6455 §5.5.1) before the relay
    /// ends its TCP connection anyway.
    public var closeGrace = Duration.seconds(1)

    public init() {}
}

/// One WebSocket connection, named by the I/O layer.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// Which end of a tunnel a connection is.
public enum RelaySide: String, Hashable, Sendable {
    /// Connected with `/cable/new/…`: the phone.
    case authenticator
    /// Connected with `/cable/connect/…/…`: the computer.
    case client
}

/// Why an upgrade request was refused, with the HTTP status to answer.
public enum RelayRejection: String, Hashable, Sendable, CaseIterable {
    case unknownPath, badHex, duplicateTunnel, unknownTunnel, tunnelAlreadyJoined, missingSubprotocol
    case tooManyTunnels, tooManyConnectionsFromAddress
    /// Only the reserve of ``RelayLimits/reservedTunnelPercent`` is left, and this address already holds a tunnel.
    case tooManyTunnelsFromAddress
    /// `/cable/connect` names a routing ID that is not this instance's (a load balancer sent it to the wrong one,
    /// or the instance that had it is gone).
    case unknownRoutingID
    /// `/cable/new` while the relay drains before it stops: another instance should take the tunnel.
    case draining
    /// `/cable/contact` for a contact ID the relay does not know (revoked, expired, never registered): 410.
    case contactGone
    /// `/cable/contact` without a valid `X-caBLE-Client-Payload` header: 400.
    case badClientPayload

    /// The HTTP status code of the refusal.
    public var status: Int {
        switch self {
        case .unknownPath, .unknownTunnel, .unknownRoutingID: 404
        case .badHex, .missingSubprotocol, .badClientPayload: 400
        case .contactGone: 410
        case .duplicateTunnel, .tunnelAlreadyJoined: 409
        case .tooManyTunnels, .tooManyConnectionsFromAddress, .tooManyTunnelsFromAddress: 429
        case .draining: 503
        }
    }
}

/// How a tunnel ended, for the one log line per tunnel.
public enum TunnelOutcome: String, Hashable, Sendable {
    case completed, neverJoined, lifetimeExpired, idle, messageTooLarge, tooManyMessages, bufferFull, textFrame
    /// A side broke the WebSocket protocol (unmasked frame, bad opcode, stray continuation, …).
    case protocolError
    /// A side sent more than ``RelayLimits/maximumOverheadFrames`` pings, pongs, fragments or empty frames.
    case tooManyOverheadFrames
    /// A side did not read what the relay wrote to it for ``RelayLimits/stalledPeerTimeout``.
    case peerNotReading
}

/// What the relay did over one tunnel's life. Never holds message contents.
public struct TunnelRecord: Hashable, Sendable {
    public var tunnelID: TunnelID
    public var routingID: RoutingID
    public var opened: ContinuousClock.Instant
    public var paired: ContinuousClock.Instant?
    public var closed: ContinuousClock.Instant
    public var bytesFromAuthenticator: Int
    public var bytesFromClient: Int
    public var messagesFromAuthenticator: Int
    public var messagesFromClient: Int
    public var outcome: TunnelOutcome

    @inlinable
    init(
        tunnelID: TunnelID, routingID: RoutingID, opened: ContinuousClock.Instant, paired: ContinuousClock.Instant?,
        closed: ContinuousClock.Instant, bytesFromAuthenticator: Int, bytesFromClient: Int,
        messagesFromAuthenticator: Int, messagesFromClient: Int, outcome: TunnelOutcome
    ) {
        self.tunnelID = tunnelID
        self.routingID = routingID
        self.opened = opened
        self.paired = paired
        self.closed = closed
        self.bytesFromAuthenticator = bytesFromAuthenticator
        self.bytesFromClient = bytesFromClient
        self.messagesFromAuthenticator = messagesFromAuthenticator
        self.messagesFromClient = messagesFromClient
        self.outcome = outcome
    }
}

/// The answer to an upgrade request.
public enum RelayUpgradeDecision: Hashable, Sendable {
    /// Accept the upgrade with subprotocol `fido.cable`; `routingIDHeader` goes in `X-caBLE-Routing-ID`.
    case accept(side: RelaySide, routingIDHeader: String?)
    case reject(RelayRejection)
}

/// The relay's pairing and forwarding rules as a pure state machine: upgrade requests, messages and
/// closes in; forwards, closes and tunnel records out. The NIO server only executes its actions.
///
/// `Message` is the bytes of a relayed message: the registry counts them and passes them on, never reads them
/// (the server's are views of NIO buffers, so a message is never copied on its way through).
///
/// Every tunnel gets the relay's one ``routingID`` (see ``RelayRouting``); tunnels are found by tunnel ID, and a
/// `/connect` that names another routing ID is refused. While ``isDraining``, `/new` is refused and the rest goes on.
///
/// The `address` of an upgrade is the key the per-address limits count (``AddressRules/limitKey(for:)``: the
/// client's network, not its exact address). Each key may hold ``RelayLimits/maximumConnectionsPerAddress``
/// WebSockets; and the last ``RelayLimits/reservedTunnelPercent`` of ``RelayLimits/maximumTunnels`` go only to
/// keys that hold no tunnel yet.
public struct RelayRegistry<Message: Collection<UInt8> & Sendable>: Sendable {
    /// What the I/O layer must do.
    public enum Action: Sendable {
        /// Send this binary message on that connection.
        case forward(Message, to: ConnectionID)
        /// Close that connection with a WebSocket close code.
        case close(ConnectionID, code: UInt16)
        /// A tunnel ended: log its record.
        case finished(TunnelRecord)
    }

    public typealias UpgradeDecision = RelayUpgradeDecision

    @usableFromInline
    struct Tunnel: Sendable {
        @usableFromInline var authenticator: ConnectionID
        /// The limit key of the address that registered it.
        @usableFromInline var address: String
        @usableFromInline var client: ConnectionID?
        @usableFromInline var opened: ContinuousClock.Instant
        @usableFromInline var paired: ContinuousClock.Instant?
        @usableFromInline var lastActivity: ContinuousClock.Instant
        @usableFromInline var buffered: [Message] = []
        @usableFromInline var bufferedBytes = 0
        @usableFromInline var messagesFromAuthenticator = 0
        @usableFromInline var messagesFromClient = 0
        @usableFromInline var bytesFromAuthenticator = 0
        @usableFromInline var bytesFromClient = 0

        @inlinable
        func messages(from side: RelaySide) -> Int {
            side == .authenticator ? messagesFromAuthenticator : messagesFromClient
        }

        /// Counts a message of `byteCount` bytes from `side`.
        @inlinable
        mutating func count(_ byteCount: Int, from side: RelaySide) {
            switch side {
            case .authenticator:
                messagesFromAuthenticator += 1
                bytesFromAuthenticator += byteCount
            case .client:
                messagesFromClient += 1
                bytesFromClient += byteCount
            }
        }
    }

    public let limits: RelayLimits
    /// This relay's routing ID: handed out on every `/new`, the only one `/connect` accepts.
    public let routingID: RoutingID
    /// Set when the relay stops taking tunnels before it stops: `/new` is refused (503), everything else goes on
    /// until the open tunnels end.
    public var isDraining = false
    @usableFromInline
    var tunnels: [TunnelID: Tunnel] = [:]
    @usableFromInline
    var connections: [ConnectionID: (tunnel: TunnelID, side: RelaySide, address: String)] = [:]
    @usableFromInline
    var connectionsPerAddress: [String: Int] = [:]
    @usableFromInline
    var tunnelsPerAddress: [String: Int] = [:]
    @usableFromInline
    var pairedCount = 0

    @inlinable
    public init(limits: RelayLimits = RelayLimits(), routingID: RoutingID) {
        self.limits = limits
        self.routingID = routingID
    }

    /// Tunnels open now, and how many of them have both sides.
    @inlinable public var openTunnels: Int { tunnels.count }

    /// The other side of `connection`'s tunnel, once both sides are there.
    @inlinable
    public func peer(of connection: ConnectionID) -> ConnectionID? {
        guard let entry = connections[connection], let tunnel = tunnels[entry.tunnel] else { return nil }
        return entry.side == .authenticator ? tunnel.client : tunnel.authenticator
    }
    @inlinable public var pairedTunnels: Int { pairedCount }

    /// An upgrade request for `path` from `address`.
    public mutating func upgrade(
        path: String,
        subprotocols: [String],
        from address: String,
        connection: ConnectionID,
        now: ContinuousClock.Instant
    ) -> UpgradeDecision {
        let parsed: TunnelPath
        do throws(TunnelPathError) {
            parsed = try TunnelPath(path: path)
        } catch {
            return .reject(error == .unknownPath ? .unknownPath : .badHex)
        }
        guard subprotocols.contains(TunnelServerProtocol.webSocketSubprotocol) else {
            return .reject(.missingSubprotocol)
        }
        guard connectionsPerAddress[address, default: 0] < limits.maximumConnectionsPerAddress else {
            return .reject(.tooManyConnectionsFromAddress)
        }
        switch parsed {
        case .new(let tunnelID):
            guard !isDraining else { return .reject(.draining) }
            if let refusal = openTunnel(tunnelID, from: address, connection: connection, now: now) {
                return .reject(refusal)
            }
            return .accept(side: .authenticator, routingIDHeader: routingID.hex)
        case .connect(let routingID, let tunnelID):
            guard routingID == self.routingID else { return .reject(.unknownRoutingID) }
            guard var tunnel = tunnels[tunnelID] else { return .reject(.unknownTunnel) }
            guard tunnel.client == nil else { return .reject(.tunnelAlreadyJoined) }
            tunnel.client = connection
            tunnel.paired = now
            pairedCount += 1
            tunnel.lastActivity = now
            tunnels[tunnelID] = tunnel
            register(connection, tunnel: tunnelID, side: .client, address: address)
            return .accept(side: .client, routingIDHeader: nil)
        case .contact:
            // The wake channel decides `/cable/contact` before the registry is asked; without it (`--no-contacts`)
            // the path is unknown.
            return .reject(.unknownPath)
        }
    }

    /// The upgraded connection is ready: the client side receives what the authenticator sent so far.
    @inlinable
    public mutating func joined(_ connection: ConnectionID) -> [Action] {
        guard let entry = connections[connection], entry.side == .client, var tunnel = tunnels[entry.tunnel] else {
            return []
        }
        let buffered = tunnel.buffered
        tunnel.buffered = []
        tunnel.bufferedBytes = 0
        tunnels[entry.tunnel] = tunnel
        return buffered.map { .forward($0, to: connection) }
    }

    /// What ``relay(_:from:now:)`` decided: the common cases without an array.
    public enum Relayed: Sendable {
        /// Send the message on the peer's connection.
        case forward(Message, to: ConnectionID)
        /// Buffered until the peer joins, or dropped for a connection no tunnel knows: nothing to do now.
        case kept
        /// The tunnel ends (a limit was broken): these actions.
        case actions([Action])
    }

    /// A whole binary message on a connection: counted against its side's limits, then forwarded to the peer, or
    /// buffered until the peer joins; one result, and no array when the message goes on or waits. (A text frame is
    /// refused by the I/O layer: ``failed(_:outcome:code:now:)``.)
    @inlinable
    public mutating func relay(_ bytes: Message, from connection: ConnectionID, now: ContinuousClock.Instant)
        -> Relayed
    {
        // The tunnel is changed in place: one lookup, no copy of its buffer.
        guard let entry = connections[connection], let index = tunnels.index(forKey: entry.tunnel) else { return .kept }
        guard bytes.count <= limits.maximumMessageBytes else {
            return .actions(finish(entry.tunnel, outcome: .messageTooLarge, now: now, code: 1009))
        }
        guard tunnels.values[index].messages(from: entry.side) < limits.maximumMessagesPerSide else {
            return .actions(finish(entry.tunnel, outcome: .tooManyMessages, now: now, code: 1008))
        }
        tunnels.values[index].count(bytes.count, from: entry.side)
        tunnels.values[index].lastActivity = now
        let peer = entry.side == .authenticator ? tunnels.values[index].client : tunnels.values[index].authenticator
        if let peer { return .forward(bytes, to: peer) }
        guard tunnels.values[index].bufferedBytes + bytes.count <= limits.maximumBufferedBytes else {
            return .actions(finish(entry.tunnel, outcome: .bufferFull, now: now, code: 1008))
        }
        tunnels.values[index].buffered.append(bytes)
        tunnels.values[index].bufferedBytes += bytes.count
        return .kept
    }

    /// A connection closed (or failed): the other side is closed too.
    @inlinable
    public mutating func closed(_ connection: ConnectionID, now: ContinuousClock.Instant) -> [Action] {
        guard let entry = connections[connection], let tunnel = tunnels[entry.tunnel] else {
            unregister(connection)
            return []
        }
        let outcome: TunnelOutcome = tunnel.client == nil ? .neverJoined : .completed
        return finish(entry.tunnel, outcome: outcome, now: now, code: 1000, except: connection)
    }

    /// A connection broke the rules in a way the I/O layer found (a frame over the size limit, a protocol
    /// error): its tunnel ends with `outcome`, and both sides, this one included, are closed with `code`.
    @inlinable
    public mutating func failed(
        _ connection: ConnectionID, outcome: TunnelOutcome, code: UInt16, now: ContinuousClock.Instant
    ) -> [Action] {
        guard let entry = connections[connection], tunnels[entry.tunnel] != nil else {
            unregister(connection)
            return [.close(connection, code: code)]
        }
        return finish(entry.tunnel, outcome: outcome, now: now, code: code)
    }

    /// Closes tunnels past their lifetime or idle too long.
    @inlinable
    public mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for (tunnelID, tunnel) in tunnels {
            if now - tunnel.opened >= limits.tunnelLifetime {
                actions += finish(tunnelID, outcome: .lifetimeExpired, now: now, code: 1001)
            } else if now - tunnel.lastActivity >= limits.idleTimeout {
                actions += finish(tunnelID, outcome: .idle, now: now, code: 1001)
            }
        }
        return actions
    }

    // MARK: Bookkeeping

    /// Registers a tunnel whose opening side (the phone's, or a linked client's) is `connection`, unless the limits
    /// refuse it: the tunnel ID is taken, the relay holds its most tunnels, or only the reserve is left and
    /// `address` holds a tunnel already.
    mutating func openTunnel(
        _ tunnelID: TunnelID, from address: String, connection: ConnectionID, now: ContinuousClock.Instant
    ) -> RelayRejection? {
        guard tunnels[tunnelID] == nil else { return .duplicateTunnel }
        guard tunnels.count < limits.maximumTunnels else { return .tooManyTunnels }
        let reserved = limits.maximumTunnels * min(max(limits.reservedTunnelPercent, 0), 100) / 100
        guard tunnels.count < limits.maximumTunnels - reserved || tunnelsPerAddress[address, default: 0] == 0 else {
            return .tooManyTunnelsFromAddress
        }
        tunnels[tunnelID] = Tunnel(authenticator: connection, address: address, opened: now, lastActivity: now)
        tunnelsPerAddress[address, default: 0] += 1
        register(connection, tunnel: tunnelID, side: .authenticator, address: address)
        return nil
    }

    private mutating func register(_ connection: ConnectionID, tunnel: TunnelID, side: RelaySide, address: String) {
        connections[connection] = (tunnel, side, address)
        connectionsPerAddress[address, default: 0] += 1
    }

    @inlinable
    mutating func unregister(_ connection: ConnectionID) {
        guard let entry = connections.removeValue(forKey: connection) else { return }
        connectionsPerAddress[entry.address, default: 1] -= 1
        if connectionsPerAddress[entry.address] == 0 { connectionsPerAddress[entry.address] = nil }
    }

    /// Ends a tunnel: closes both sides (but `except`, which is already gone) and reports its record.
    @inlinable
    mutating func finish(
        _ tunnelID: TunnelID, outcome: TunnelOutcome, now: ContinuousClock.Instant, code: UInt16,
        except: ConnectionID? = nil
    ) -> [Action] {
        guard let tunnel = tunnels.removeValue(forKey: tunnelID) else { return [] }
        if tunnel.client != nil { pairedCount -= 1 }
        tunnelsPerAddress[tunnel.address, default: 1] -= 1
        if tunnelsPerAddress[tunnel.address] == 0 { tunnelsPerAddress[tunnel.address] = nil }
        var actions: [Action] = []
        for connection in [tunnel.authenticator, tunnel.client].compactMap({ $0 }) {
            unregister(connection)
            if connection != except { actions.append(.close(connection, code: code)) }
        }
        let record = TunnelRecord(
            tunnelID: tunnelID, routingID: routingID, opened: tunnel.opened, paired: tunnel.paired, closed: now,
            bytesFromAuthenticator: tunnel.bytesFromAuthenticator, bytesFromClient: tunnel.bytesFromClient,
            messagesFromAuthenticator: tunnel.messagesFromAuthenticator, messagesFromClient: tunnel.messagesFromClient,
            outcome: outcome)
        actions.append(.finished(record))
        return actions
    }
}

extension RelayRegistry.Action: Equatable where Message: Equatable {}
extension RelayRegistry.Action: Hashable where Message: Hashable {}
