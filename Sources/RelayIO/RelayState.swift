import Basics
import CoreMetrics
import Hybrid
import Logging
import NIOCore
import Prometheus
import Relay
import Synchronization

/// A registry action with its connection looked up, carried out after the lock is released.
enum Effect {
    case deliver(RelayedMessage, to: RelayConnection)
    case close(RelayConnection, code: UInt16)
    case log(TunnelRecord)
    /// The relay drains and its last tunnel has ended.
    case drained(EventLoopPromise<Void>)
}

/// The registry, the connections by ID and the counters, behind one lock shared by every event loop.
///
/// Each call takes the lock once, asks ``RelayRegistry`` and resolves its actions to connections; the caller
/// then runs ``perform(_:)`` outside the lock. Order is kept because one connection's frames are handled in
/// order on its own event loop, and a delivery to another loop is queued behind whatever that loop is doing.
final class RelayState: Sendable {
    struct Entry {
        let connection: RelayConnection
        /// Still in the HTTP stage: counted against the limits of pending connections.
        var isPending: Bool
        /// The key the per-address limit of pending connections counts it under; `nil` for a trusted proxy,
        /// which speaks for many clients.
        var pendingKey: String?
    }

    /// The registry relays the buffers the messages were unmasked into: a message is never copied on its way.
    typealias Registry = RelayRegistry<RelayedMessage>

    struct Locked {
        var registry: Registry
        var connections: [ConnectionID: Entry] = [:]
        var pendingPerAddress: [String: Int] = [:]
        var pendingCount = 0
        var nextConnection: UInt64 = 0
        /// Set by ``RelayState/shutDown()``: every close then says 1001 (going away).
        var isShuttingDown = false
        /// While the relay drains: completed when its last tunnel has ended.
        var drained: EventLoopPromise<Void>?

        mutating func resolve(_ actions: [Registry.Action], metrics: RelayMetrics) -> [Effect] {
            var effects: [Effect] = []
            effects.reserveCapacity(actions.count)
            var messages = 0
            var bytes = 0
            for action in actions {
                switch action {
                case .forward(let message, let id):
                    guard let entry = connections[id] else { continue }
                    messages += 1
                    bytes += message.count
                    effects.append(.deliver(message, to: entry.connection))
                case .close(let id, let code):
                    guard let entry = connections[id] else { continue }
                    effects.append(.close(entry.connection, code: isShuttingDown ? 1001 : code))
                case .finished(let record):
                    metrics.closed[record.outcome]?.increment()
                    effects.append(.log(record))
                }
            }
            if messages > 0 {
                metrics.messagesRelayed.increment(by: Int64(messages))
                metrics.bytesRelayed.increment(by: Int64(bytes))
            }
            if let promise = drained, registry.openTunnels == 0 {
                drained = nil
                effects.append(.drained(promise))
            }
            return effects
        }

        mutating func endPending(_ id: ConnectionID) {
            guard let entry = connections[id], entry.isPending else { return }
            connections[id]?.isPending = false
            pendingCount -= 1
            guard let key = entry.pendingKey else { return }
            pendingPerAddress[key, default: 1] -= 1
            if pendingPerAddress[key] == 0 { pendingPerAddress[key] = nil }
        }
    }

    let limits: RelayLimits
    let addressRules: AddressRules
    /// This instance's routing ID, handed out on every `/cable/new`.
    let routingID: RoutingID
    let metrics: RelayMetrics
    let locked: Mutex<Locked>
    private let logger: Logger
    /// The wake channel for linked phones (`RelayState+Contacts.swift`).
    let contacts: RelayContacts

    /// The time now: the monotonic clock, or a test's manual one.
    let now: @Sendable () -> ContinuousClock.Instant

    init(
        limits: RelayLimits, addressRules: AddressRules = AddressRules(), routingID: RoutingID,
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }, contacts: RelayContacts? = nil
    ) {
        self.now = now
        self.contacts = contacts ?? RelayContacts(routingID: routingID, logger: logger, now: now)
        self.limits = limits
        self.addressRules = addressRules
        self.routingID = routingID
        self.metrics = RelayMetrics(registry: metrics)
        self.logger = logger
        locked = Mutex(Locked(registry: Registry(limits: limits, routingID: routingID)))
    }

    // MARK: Events

    /// A TCP connection was accepted from `address`; `nil` when `maximumPendingConnections` connections are in
    /// the HTTP stage, or when that address (its network, see ``AddressRules``) already has
    /// `maximumConnectionsPerAddress` of them. A trusted proxy is only held to the first limit.
    func accept(address: String, make: (ConnectionID) -> RelayConnection) -> RelayConnection? {
        let key = addressRules.isTrustedProxy(address) ? nil : addressRules.limitKey(for: address)
        return locked.withLock { state in
            guard state.pendingCount < limits.maximumPendingConnections else {
                metrics.refused(.tooManyPendingConnectionsOverall)
                return nil
            }
            if let key, state.pendingPerAddress[key, default: 0] >= limits.maximumConnectionsPerAddress {
                metrics.refused(.tooManyPendingConnections)
                return nil
            }
            state.nextConnection += 1
            let connection = make(ConnectionID(state.nextConnection))
            state.connections[connection.id] = Entry(connection: connection, isPending: true, pendingKey: key)
            state.pendingCount += 1
            if let key { state.pendingPerAddress[key, default: 0] += 1 }
            metrics.connectionsAccepted.increment()
            return connection
        }
    }

    /// An upgrade request that passed the HTTP checks, with the values of its `X-Forwarded-For` headers (believed
    /// only from a trusted proxy).
    func upgrade(_ connection: RelayConnection, path: String, subprotocols: [String], forwardedFor: [String] = [])
        -> RelayUpgradeDecision
    {
        let now = self.now()
        let client = addressRules.clientAddress(peer: connection.address, forwardedFor: forwardedFor)
        let key = addressRules.limitKey(for: client)
        return locked.withLock { state in
            let decision = state.registry.upgrade(
                path: path, subprotocols: subprotocols, from: key, connection: connection.id, now: now)
            switch decision {
            case .accept(let side, _):
                state.endPending(connection.id)
                (side == .authenticator ? metrics.tunnelsOpened : metrics.tunnelsPaired).increment()
            case .reject:
                break  // counted when the answer goes out
            }
            return decision
        }
    }

    /// Counts a refusal made outside the registry.
    func refused(_ refusal: Refusal) { metrics.refused(refusal) }

    /// The upgraded connection is ready for frames.
    func joined(_ connection: RelayConnection) -> [Effect] {
        if contacts.joined(connection, state: self) { return [] }
        return locked.withLock { state in state.resolve(state.registry.joined(connection.id), metrics: metrics) }
    }

    /// A whole binary message arrived on `connection`: forwarded to the peer's connection straight after the lock,
    /// with no array of actions when it simply goes on (or waits for the peer).
    func relay(_ message: ByteBuffer, from connection: RelayConnection) {
        if contacts.message(message.readableBytesView, from: connection, state: self) { return }
        let now = self.now()
        let (target, effects) = locked.withLock { state -> (RelayConnection?, [Effect]) in
            switch state.registry.relay(RelayedMessage(message), from: connection.id, now: now) {
            case .forward(_, let id): (state.connections[id]?.connection, [])
            case .kept: (nil, [])
            case .actions(let actions): (nil, state.resolve(actions, metrics: metrics))
            }
        }
        if let target {
            metrics.messagesRelayed.increment(by: 1)
            metrics.bytesRelayed.increment(by: Int64(message.readableBytes))
            target.deliver(message)
        }
        if !effects.isEmpty { perform(effects) }
    }

    /// `connection` broke a rule the I/O layer checks (frame too large, text, protocol error, overhead budget).
    func failed(_ connection: RelayConnection, outcome: TunnelOutcome, code: UInt16) -> [Effect] {
        let now = self.now()
        return locked.withLock { state in
            state.resolve(
                state.registry.failed(connection.id, outcome: outcome, code: code, now: now), metrics: metrics)
        }
    }

    /// The TCP connection is gone.
    func disconnected(_ connection: RelayConnection) -> [Effect] {
        contacts.disconnected(connection)
        let now = self.now()
        return locked.withLock { state in
            state.endPending(connection.id)
            let effects = state.resolve(state.registry.closed(connection.id, now: now), metrics: metrics)
            state.connections[connection.id] = nil
            return effects
        }
    }

    /// Ends tunnels past their lifetime or idle timeout.
    func tick() -> [Effect] {
        contacts.tick(state: self)
        let now = self.now()
        return locked.withLock { state in state.resolve(state.registry.tick(now: now), metrics: metrics) }
    }

    /// The relay stops taking tunnels: `/cable/new` is refused (503) and `/healthz` answers 503, while
    /// `/cable/connect` and the open tunnels go on. `promise` is completed when the last tunnel has ended (at once
    /// if none is open); a second call's promise is completed with the first's.
    func startDraining(_ promise: EventLoopPromise<Void>) -> [Effect] {
        locked.withLock { state in
            state.registry.isDraining = true
            if let earlier = state.drained {
                earlier.futureResult.cascade(to: promise)
                return []
            }
            state.drained = promise
            return state.resolve([], metrics: metrics)
        }
    }

    /// Stops waiting for the open tunnels: the drain's promise is completed now.
    func stopWaitingForTunnels() -> [Effect] {
        locked.withLock { state in
            guard let promise = state.drained else { return [] }
            state.drained = nil
            return [.drained(promise)]
        }
    }

    /// Whether the relay drains (`/healthz` answers 503).
    var isDraining: Bool { locked.withLock { $0.registry.isDraining } }

    /// The server is stopping: returns every connection open now, and from now on closes say 1001.
    func shutDown() -> [RelayConnection] {
        locked.withLock { state in
            state.isShuttingDown = true
            return state.connections.values.map(\.connection)
        }
    }

    /// The other side of `connection`'s tunnel, once both sides are there.
    func peer(of connection: RelayConnection) -> RelayConnection? {
        locked.withLock { state in
            state.registry.peer(of: connection.id).flatMap { state.connections[$0]?.connection }
        }
    }

    // MARK: Reading

    /// Connections, open tunnels and paired tunnels held now.
    var holdings: (connections: Int, openTunnels: Int, pairedTunnels: Int) {
        locked.withLock { ($0.connections.count, $0.registry.openTunnels, $0.registry.pairedTunnels) }
    }

    /// The metrics in Prometheus text format.
    func metricsText() -> String {
        let (connections, openTunnels, pairedTunnels, isDraining) = locked.withLock {
            ($0.connections.count, $0.registry.openTunnels, $0.registry.pairedTunnels, $0.registry.isDraining)
        }
        return metrics.text(
            openTunnels: openTunnels, pairedTunnels: pairedTunnels, openConnections: connections,
            isDraining: isDraining, wakeChannel: contacts.counts)
    }

    // MARK: Effects

    /// Carries out effects; call it without holding the lock.
    func perform(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .deliver(let message, let connection): connection.deliver(message.buffer)
            case .close(let connection, let code): connection.close(code: code)
            case .log(let record): log(record)
            case .drained(let promise): promise.succeed()
            }
        }
    }

    /// One line per tunnel: never message contents, and only the first 8 hex digits of the tunnel ID.
    private func log(_ record: TunnelRecord) {
        func milliseconds(_ duration: Duration) -> String { String(duration.inMilliseconds) }
        logger.info(
            "tunnel closed",
            metadata: [
                "outcome": "\(record.outcome.rawValue)",
                "tunnel": "\(record.tunnelID.hex.prefix(8))",
                "routing_id": "\(record.routingID.hex)",
                "duration_ms": "\(milliseconds(record.closed - record.opened))",
                "pair_ms": "\(record.paired.map { milliseconds($0 - record.opened) } ?? "-")",
                "bytes_from_authenticator": "\(record.bytesFromAuthenticator)",
                "bytes_from_client": "\(record.bytesFromClient)",
                "messages_from_authenticator": "\(record.messagesFromAuthenticator)",
                "messages_from_client": "\(record.messagesFromClient)",
            ])
    }
}

/// A relayed message as the registry holds it: the buffer it was unmasked into, whose readable bytes are the
/// message (and which may hold its server frame's header just before them, ``ServerFrame``). The registry only
/// counts its bytes.
struct RelayedMessage: RandomAccessCollection, Sendable {
    let buffer: ByteBuffer

    init(_ buffer: ByteBuffer) { self.buffer = buffer }

    var startIndex: Int { 0 }
    var endIndex: Int { buffer.readableBytes }
    subscript(position: Int) -> UInt8 { buffer.readableBytesView[buffer.readerIndex + position] }
}
