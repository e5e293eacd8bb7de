import Basics
import Hybrid
import Logging
import NIOCore
import RelayCore
import Synchronization

/// A registry action with its connection looked up, carried out after the lock is released.
enum Effect {
    case deliver(ByteBufferView, to: RelayConnection)
    case close(RelayConnection, code: UInt16)
    case log(TunnelRecord)
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

    /// The registry relays views of the buffers the frames arrived in: a message is never copied on its way.
    typealias Registry = RelayRegistry<ByteBufferView>

    struct Locked {
        var registry: Registry
        var connections: [ConnectionID: Entry] = [:]
        var pendingPerAddress: [String: Int] = [:]
        var pendingCount = 0
        var nextConnection: UInt64 = 0
        var metrics = RelayMetrics()
        /// Set by ``RelayState/shutDown()``: every close then says 1001 (going away).
        var isShuttingDown = false

        mutating func resolve(_ actions: [Registry.Action]) -> [Effect] {
            var effects: [Effect] = []
            effects.reserveCapacity(actions.count)
            for action in actions {
                switch action {
                case .forward(let bytes, let id):
                    guard let entry = connections[id] else { continue }
                    metrics.messagesRelayed += 1
                    metrics.bytesRelayed += bytes.count
                    effects.append(.deliver(bytes, to: entry.connection))
                case .close(let id, let code):
                    guard let entry = connections[id] else { continue }
                    effects.append(.close(entry.connection, code: isShuttingDown ? 1001 : code))
                case .finished(let record):
                    metrics.closed[record.outcome, default: 0] += 1
                    effects.append(.log(record))
                }
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
    let locked: Mutex<Locked>
    private let logger: Logger
    /// The wake channel for linked phones (`RelayState+Contacts.swift`).
    let contacts: RelayContacts

    /// The time now: the monotonic clock, or a test's manual one.
    let now: @Sendable () -> ContinuousClock.Instant

    init(
        limits: RelayLimits, addressRules: AddressRules = AddressRules(), routingIDPrefix: UInt8?, logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }, contacts: RelayContacts? = nil
    ) {
        self.now = now
        self.contacts = contacts ?? RelayContacts(routingIDPrefix: routingIDPrefix, logger: logger, now: now)
        self.limits = limits
        self.addressRules = addressRules
        self.logger = logger
        locked = Mutex(Locked(registry: Registry(limits: limits, routingIDPrefix: routingIDPrefix)))
    }

    // MARK: Events

    /// A TCP connection was accepted from `address`; `nil` when `maximumPendingConnections` connections are in
    /// the HTTP stage, or when that address (its network, see ``AddressRules``) already has
    /// `maximumConnectionsPerAddress` of them. A trusted proxy is only held to the first limit.
    func accept(address: String, make: (ConnectionID) -> RelayConnection) -> RelayConnection? {
        let key = addressRules.isTrustedProxy(address) ? nil : addressRules.limitKey(for: address)
        return locked.withLock { state in
            guard state.pendingCount < limits.maximumPendingConnections else {
                state.metrics.rejections[.tooManyPendingConnectionsOverall, default: 0] += 1
                return nil
            }
            if let key, state.pendingPerAddress[key, default: 0] >= limits.maximumConnectionsPerAddress {
                state.metrics.rejections[.tooManyPendingConnections, default: 0] += 1
                return nil
            }
            state.nextConnection += 1
            let connection = make(ConnectionID(state.nextConnection))
            state.connections[connection.id] = Entry(connection: connection, isPending: true, pendingKey: key)
            state.pendingCount += 1
            if let key { state.pendingPerAddress[key, default: 0] += 1 }
            state.metrics.connectionsAccepted += 1
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
                path: path, subprotocols: subprotocols, from: key, connection: connection.id, now: now,
                randomRoutingID: { (0..<RoutingID.byteCount).map { _ in UInt8.random(in: 0...255) } })
            switch decision {
            case .accept(let side, _):
                state.endPending(connection.id)
                if side == .authenticator { state.metrics.tunnelsOpened += 1 } else { state.metrics.tunnelsPaired += 1 }
            case .reject:
                break  // counted when the answer goes out
            }
            return decision
        }
    }

    /// Counts a refusal made outside the registry.
    func refused(_ refusal: Refusal) {
        locked.withLock { $0.metrics.rejections[refusal, default: 0] += 1 }
    }

    /// The upgraded connection is ready for frames.
    func joined(_ connection: RelayConnection) -> [Effect] {
        if contacts.joined(connection, state: self) { return [] }
        return locked.withLock { state in state.resolve(state.registry.joined(connection.id)) }
    }

    /// A whole binary message arrived on `connection`.
    func message(_ bytes: ByteBufferView, from connection: RelayConnection) -> [Effect] {
        if contacts.message(bytes, from: connection, state: self) { return [] }
        let now = self.now()
        return locked.withLock { state in
            state.resolve(state.registry.message(bytes, from: connection.id, now: now))
        }
    }

    /// `connection` broke a rule the I/O layer checks (frame too large, text, protocol error, overhead budget).
    func failed(_ connection: RelayConnection, outcome: TunnelOutcome, code: UInt16) -> [Effect] {
        let now = self.now()
        return locked.withLock { state in
            state.resolve(state.registry.failed(connection.id, outcome: outcome, code: code, now: now))
        }
    }

    /// The TCP connection is gone.
    func disconnected(_ connection: RelayConnection) -> [Effect] {
        contacts.disconnected(connection)
        let now = self.now()
        return locked.withLock { state in
            state.endPending(connection.id)
            let effects = state.resolve(state.registry.closed(connection.id, now: now))
            state.connections[connection.id] = nil
            return effects
        }
    }

    /// Ends tunnels past their lifetime or idle timeout.
    func tick() -> [Effect] {
        contacts.tick(state: self)
        let now = self.now()
        return locked.withLock { state in state.resolve(state.registry.tick(now: now)) }
    }

    /// The server is stopping: returns every connection open now, and from now on closes say 1001.
    func shutDown() -> [RelayConnection] {
        locked.withLock { state in
            state.isShuttingDown = true
            return state.connections.values.map(\.connection)
        }
    }

    // MARK: Reading

    /// The metrics in Prometheus text format.
    /// Connections, open tunnels and paired tunnels held now.
    var holdings: (connections: Int, openTunnels: Int, pairedTunnels: Int) {
        locked.withLock { ($0.connections.count, $0.registry.openTunnels, $0.registry.pairedTunnels) }
    }

    func metricsText() -> String {
        locked.withLock { state in
            state.metrics.text(
                openTunnels: state.registry.openTunnels, pairedTunnels: state.registry.pairedTunnels,
                openConnections: state.connections.count)
        }
    }

    // MARK: Effects

    /// Carries out effects; call it without holding the lock.
    func perform(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .deliver(let bytes, let connection): connection.deliver(ByteBuffer(bytes))
            case .close(let connection, let code): connection.close(code: code)
            case .log(let record): log(record)
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
