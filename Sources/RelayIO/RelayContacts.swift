import Basics
import CoreMetrics
import Foundation
import PasskeyFilesIO
import Hybrid
import Logging
import NIOCore
import Relay
import Synchronization

/// Settings of the wake channel for linked phones (`/cable/listen`, `/cable/contact`; Docs/Relay.md).
public struct RelayContactConfiguration: Sendable {
    /// Serve `/cable/listen` and `/cable/contact` (default true). Off, `/cable/contact` is 404 as before.
    public var isEnabled = true
    /// Waits, heartbeats, expiry and the number of contacts.
    public var limits = ContactLimits()
    /// The file the contacts are kept in across restarts (JSON, mode 0600: hashes of contact IDs and sealed
    /// verifiers only). `nil` keeps them in memory: a restart forgets every contact, and linked clients then get 410.
    public var file: String?

    public init() {}
}

/// Why the contact file could not be read or written.
struct ContactFileError: Error, CustomStringConvertible {
    var description: String
}

/// The wake channel on SwiftNIO: the ``ContactRegistry`` behind its own lock, the listener connections by ID, and
/// the contact file. It carries out the registry's actions; the tunnels themselves stay in ``RelayState``'s
/// registry, which it reaches through the state (`RelayState+Contacts.swift`).
final class RelayContacts: Sendable {
    private struct Locked {
        var registry: ContactRegistry
        /// Listener connections, by ID, to deliver to.
        var listeners: [ConnectionID: RelayConnection] = [:]
        var listenersPerAddress: [String: Int] = [:]
        var listenerAddress: [ConnectionID: String] = [:]
        /// Contact requests waiting for their phone.
        var requests: [ConnectionID: RelayConnection] = [:]
        /// Contact requests whose upgrade is not complete yet: the wake goes out once it is, so that a close (a
        /// declined wake) never follows the 101 answer in the same packet, where the client's HTTP decoder, seeing
        /// the end of the stream too, would drop it.
        var staged: [ConnectionID: (contactID: [UInt8], tunnelID: TunnelID, clientPayload: [UInt8])] = [:]
        /// Counts changes of the contacts, so that an older snapshot never overwrites a newer one.
        var generation = 0
    }

    let configuration: RelayContactConfiguration
    /// This instance's routing ID (`--routing-id` or `--instance`): every contact ID it issues starts with it.
    let routingID: RoutingID
    /// Whether `/cable/listen/{ROUTING_ID}` must name ``routingID`` (404 `unknownRoutingID` otherwise): true when it
    /// was configured (`--routing-id`, `--instance`), as in a cluster. A random routing ID changes at every start
    /// while the contact file keeps the contacts issued under earlier ones, so such a relay takes any.
    let routingIDIsConfigured: Bool
    private let locked: Mutex<Locked>
    /// Listener connections and staged contact requests: while there are none, a tunnel's frames and joins do not
    /// take the lock above.
    private let watched = Atomic<Int>(0)
    private let written = Mutex(0)
    private let logger: Logger
    private let now: @Sendable () -> ContinuousClock.Instant
    private let date: @Sendable () -> Int64

    /// The wake channel with `records` (read from the contact file by ``load(configuration:routingID:routingIDIsConfigured:logger:)``).
    init(
        configuration: RelayContactConfiguration = RelayContactConfiguration(), routingID: RoutingID,
        routingIDIsConfigured: Bool = true, logger: Logger, records: [ContactRecord] = [],
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        date: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.date = date
        self.routingID = routingID
        self.routingIDIsConfigured = routingIDIsConfigured
        locked = Mutex(Locked(registry: ContactRegistry(limits: configuration.limits, records: records)))
    }

    /// Reads the contact file, when one is configured and exists.
    static func load(
        configuration: RelayContactConfiguration, routingID: RoutingID, routingIDIsConfigured: Bool, logger: Logger
    ) throws(ContactFileError) -> RelayContacts {
        let records = try configuration.file.map(read) ?? []
        return RelayContacts(
            configuration: configuration, routingID: routingID, routingIDIsConfigured: routingIDIsConfigured,
            logger: logger, records: records)
    }

    /// Whether a listener connection on `path` belongs here: no routing ID, this instance's, or any when the routing
    /// ID is random (``routingIDIsConfigured``).
    func accepts(_ path: ListenerPath) -> Bool {
        guard let named = path.routingID, routingIDIsConfigured else { return true }
        return named == routingID
    }

    var isEnabled: Bool { configuration.isEnabled }

    /// Contacts kept, listener connections, contact requests waiting.
    var counts: (contacts: Int, listeners: Int, waiting: Int) { locked.withLock { $0.registry.counts } }

    // MARK: Listeners

    /// A `/cable/listen` upgrade from the network `address`: refused when that network holds
    /// `maximumConnections` listener connections already.
    func acceptListener(_ connection: RelayConnection, address: String, maximumConnections: Int) -> Bool {
        locked.withLock { state in
            guard state.listenersPerAddress[address, default: 0] < maximumConnections else { return false }
            state.listenersPerAddress[address, default: 0] += 1
            state.listenerAddress[connection.id] = address
            state.listeners[connection.id] = connection
            watched.add(1, ordering: .relaxed)
            return true
        }
    }

    /// The connection's WebSocket is ready: for a listener, the challenge goes out (true); for a contact request,
    /// the wake (false: the tunnel side joins as usual).
    func joined(_ connection: RelayConnection, state relay: RelayState) -> Bool {
        guard watched.load(ordering: .relaxed) > 0 else { return false }
        let now = now()
        let date = date()
        let routingID = routingID
        let actions: [ContactRegistry.Action]? = locked.withLock { state in
            if let staged = state.staged.removeValue(forKey: connection.id) {
                watched.subtract(1, ordering: .relaxed)
                state.requests[connection.id] = connection
                return state.registry.contactTunnelOpened(
                    connection.id, contactID: staged.contactID, routingID: routingID, tunnelID: staged.tunnelID,
                    clientPayload: staged.clientPayload, now: now, date: date)
            }
            guard state.listeners[connection.id] != nil else { return nil }
            var generator = SystemRandomNumberGenerator()
            let challenge = (0..<ListenerMessage.challengeLength).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            return state.registry.listenerOpened(
                connection.id, challenge: challenge, now: now, network: state.listenerAddress[connection.id] ?? "")
        }
        guard let actions else { return false }
        perform(actions, state: relay)
        return isListener(connection)
    }

    private func isListener(_ connection: RelayConnection) -> Bool {
        locked.withLock { $0.listeners[connection.id] != nil }
    }

    /// A whole binary message; false when `connection` is no listener (a tunnel side).
    func message(_ bytes: ByteBufferView, from connection: RelayConnection, state relay: RelayState) -> Bool {
        guard watched.load(ordering: .relaxed) > 0 else { return false }
        let now = now()
        let date = date()
        let routingID = routingID
        let actions: [ContactRegistry.Action]? = locked.withLock { state in
            guard state.listeners[connection.id] != nil else { return nil }
            return state.registry.listenerMessage(
                Array(bytes), from: connection.id, routingID: routingID, now: now, date: date,
                randomBytes: { count in (0..<count).map { _ in UInt8.random(in: 0...255) } })
        }
        guard let actions else { return false }
        perform(actions, state: relay)
        return true
    }

    /// The TCP connection is gone: a listener, or a contact request that waited.
    func disconnected(_ connection: RelayConnection) {
        locked.withLock { state in
            state.requests[connection.id] = nil
            state.registry.contactRequestEnded(connection.id)
            if state.staged.removeValue(forKey: connection.id) != nil { watched.subtract(1, ordering: .relaxed) }
            guard state.listeners.removeValue(forKey: connection.id) != nil else { return }
            watched.subtract(1, ordering: .relaxed)
            state.registry.listenerClosed(connection.id)
            if let address = state.listenerAddress.removeValue(forKey: connection.id) {
                state.listenersPerAddress[address, default: 1] -= 1
                if state.listenersPerAddress[address] == 0 { state.listenersPerAddress[address] = nil }
            }
        }
    }

    // MARK: Contact requests

    /// Whether the contact is known; the contact ID is hashed at once and never kept.
    func isKnown(_ contactID: [UInt8]) -> Bool {
        locked.withLock { $0.registry.contactRequested(contactID) == .known }
    }

    /// The contact request's tunnel is registered: the listeners are woken once its upgrade completes (``joined``).
    func contactTunnelOpened(
        _ connection: RelayConnection, contactID: [UInt8], tunnelID: TunnelID, clientPayload: [UInt8]
    ) {
        locked.withLock { state in
            state.staged[connection.id] = (contactID, tunnelID, clientPayload)
            watched.add(1, ordering: .relaxed)
        }
    }

    // MARK: Time

    /// Expired waits, challenges and silent listeners, heartbeats, idle contacts.
    func tick(state relay: RelayState) {
        let now = now()
        let date = date()
        perform(locked.withLock { $0.registry.tick(now: now, date: date) }, state: relay)
    }

    // MARK: Actions

    private func perform(_ actions: [ContactRegistry.Action], state relay: RelayState) {
        for action in actions {
            switch action {
            case .send(let message, let id):
                let connection = locked.withLock { $0.listeners[id] }
                connection?.deliver(ByteBuffer(bytes: message.bytes))
                if case .wake = message, connection != nil {
                    relay.metrics.wakesSent.increment()
                    logger.debug("wake sent to a listener")
                }
            case .close(let id, let code):
                locked.withLock { $0.listeners[id] }?.close(code: code)
            case .endContactRequest(let id, let code):
                guard let connection = locked.withLock({ $0.requests.removeValue(forKey: id) }) else { continue }
                if code == ListenerCloseCode.phoneUnreachable { relay.metrics.contactRequestsUnanswered.increment() }
                relay.expireContactTunnel(connection, code: code)
            case .persist:
                persist()
            }
        }
    }

    /// Writes the contacts to the file, unless a newer snapshot was written meanwhile.
    private func persist() {
        guard let file = configuration.file else { return }
        let (records, generation) = locked.withLock { state in
            state.generation += 1
            return (state.registry.allRecords, state.generation)
        }
        written.withLock { last in
            guard generation > last else { return }
            do throws(ContactFileError) {
                try Self.write(records, to: file)
                last = generation
            } catch {
                logger.error("cannot write the contact file", metadata: ["reason": "\(error)"])
            }
        }
    }

    // MARK: The file

    private struct FileContents: Codable {
        var version: Int
        var contacts: [Entry]

        struct Entry: Codable {
            /// Base64url of SHA-256(contact ID).
            var hash: String
            /// Base64url of the sealed verifier.
            var verifier: String
            var created: Int64
            var lastUsed: Int64
            /// False until a listener proves ownership; absent in files written before it existed (proved).
            var proved: Bool?
        }
    }

    static func read(_ path: String) throws(ContactFileError) -> [ContactRecord] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let contents: FileContents
        do {
            contents = try JSONDecoder().decode(FileContents.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ContactFileError(description: "the contact file \(path) cannot be read: \(error)")
        }
        guard contents.version == 1 else {
            throw ContactFileError(description: "the contact file \(path) has version \(contents.version), not 1")
        }
        return try contents.contacts.map { entry throws(ContactFileError) in
            guard let hash = [UInt8](base64URLEncoded: entry.hash), hash.count == 32,
                let sealed = [UInt8](base64URLEncoded: entry.verifier)
            else { throw ContactFileError(description: "the contact file \(path) holds a malformed contact") }
            return ContactRecord(
                hash: hash, sealedVerifier: sealed, created: entry.created, lastUsed: entry.lastUsed,
                proved: entry.proved ?? true)
        }
    }

    static func write(_ records: [ContactRecord], to path: String) throws(ContactFileError) {
        let contents = FileContents(
            version: 1,
            contacts: records.map {
                .init(
                    hash: $0.hash.base64URLEncodedString, verifier: $0.sealedVerifier.base64URLEncodedString,
                    created: $0.created, lastUsed: $0.lastUsed, proved: $0.proved == false ? false : nil)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            try OwnerOnlyFile.write([UInt8](try encoder.encode(contents)), to: URL(fileURLWithPath: path))
        } catch let error as OwnerOnlyFileError {
            throw ContactFileError(description: "cannot write the contact file \(error)")
        } catch {
            throw ContactFileError(description: "cannot write the contact file \(path): \(error)")
        }
    }
}
