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
    /// Called by the contact file's writer before each write (tests hold it there).
    var writeHook: (@Sendable () -> Void)?

    public init() {}
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
    private let journal = Mutex(Journal())
    /// The contact file, when one is configured; its writer works on its own thread.
    private let file: ContactFile?
    private let writer = DispatchQueue(label: "passkey-relay.contacts")
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
        self.file = configuration.file.map(ContactFile.init(path:))
        self.logger = logger
        self.now = now
        self.date = date
        self.routingID = routingID
        self.routingIDIsConfigured = routingIDIsConfigured
        locked = Mutex(Locked(registry: ContactRegistry(limits: configuration.limits, records: records)))
    }

    /// Reads the contact file, when one is configured and exists; a journal left beside it is folded into the file
    /// at once.
    static func load(
        configuration: RelayContactConfiguration, routingID: RoutingID, routingIDIsConfigured: Bool, logger: Logger
    ) throws(ContactFileError) -> RelayContacts {
        var records: [ContactRecord] = []
        if let path = configuration.file {
            let file = ContactFile(path: path)
            let loaded = try file.load()
            records = loaded.records
            if FileManager.default.fileExists(atPath: file.journalPath) { try file.replace(with: records) }
        }
        return RelayContacts(
            configuration: configuration, routingID: routingID, routingIDIsConfigured: routingIDIsConfigured,
            logger: logger, records: records)
    }

    /// Whether a listener connection on `path` belongs here: no routing ID, this instance's, or one that contacts
    /// kept here were issued under (a random routing ID changes at every start, while the contact file keeps the
    /// contacts issued under earlier ones). A relay whose file was written before routing IDs were kept takes any
    /// unless its routing ID is configured, until every contact has been listened for.
    func accepts(_ path: ListenerPath) -> Bool {
        guard let named = path.routingID, named != routingID else { return true }
        switch locked.withLock({ $0.registry.holdsContacts(issuedUnder: named) }) {
        case true?: return true
        case false?: return false
        case nil: return !routingIDIsConfigured
        }
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
        let actions = update { state in
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
        perform(actions.actions, afterWrite: actions.number, state: relay)
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
        let actions = update { state in
            guard state.listeners[connection.id] != nil else { return nil }
            return state.registry.listenerMessage(
                Array(bytes), from: connection.id, routingID: routingID, now: now, date: date,
                randomBytes: { count in (0..<count).map { _ in UInt8.random(in: 0...255) } })
        }
        guard let actions else { return false }
        perform(actions.actions, afterWrite: actions.number, state: relay)
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
        guard let actions = update({ $0.registry.tick(now: now, date: date) }) else { return }
        perform(actions.actions, afterWrite: actions.number, state: relay)
    }

    // MARK: Actions

    /// Runs `body` under the lock; the changes for the contact file among its actions join the writer's queue there,
    /// and the number of the last one comes back with them (0: none).
    private func update(
        _ body: (inout Locked) -> [ContactRegistry.Action]?
    ) -> (actions: [ContactRegistry.Action], number: Int)? {
        locked.withLock { state in
            guard let actions = body(&state) else { return nil }
            return (actions, queue(actions))
        }
    }

    /// Carries out `actions`; those after the first change for the contact file wait until change `number` is on
    /// the disk (a phone is told "registered" or "revoked" only then).
    private func perform(_ actions: [ContactRegistry.Action], afterWrite number: Int, state relay: RelayState) {
        guard number > 0, let first = actions.firstIndex(where: \.isJournal) else {
            carryOut(actions, state: relay)
            return
        }
        carryOut(actions[..<first], state: relay)
        let rest = Array(actions[first...])
        whenWritten(number) { self.carryOut(rest, state: relay) }
        scheduleWrite()
    }

    private func carryOut(_ actions: some Collection<ContactRegistry.Action>, state relay: RelayState) {
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
            case .journal:
                break
            }
        }
    }

    // MARK: The contact file

    /// Changes waiting for the writer, and what waits for them to be on the disk.
    private struct Journal {
        /// Changes the registry made that are not written yet, in order.
        var pending: [ContactChange] = []
        /// The number of the last change handed to the journal, and of the last one on the disk.
        var queued = 0
        var written = 0
        /// Actions that wait until the change with their number is on the disk.
        var waiting: [(number: Int, run: @Sendable () -> Void)] = []
        /// Whether the writer is on its way.
        var scheduled = false
        /// Complete lines in the journal file: past ``RelayContacts/compactionThreshold(contacts:)`` the file is
        /// written whole and the journal starts again.
        var entries = 0
    }

    /// Lines the journal may hold before the contacts are written whole: at least 4,096, and twice the contacts.
    static func compactionThreshold(contacts: Int) -> Int { max(4096, 2 * contacts) }

    /// `actions` made under the lock: the journal's changes join the queue there, in the registry's order, and the
    /// number of the last one comes back (0: none).
    private func queue(_ actions: [ContactRegistry.Action]) -> Int {
        guard file != nil else { return 0 }
        let changes = actions.compactMap { action -> ContactChange? in
            guard case .journal(let change) = action else { return nil }
            return change
        }
        guard !changes.isEmpty else { return 0 }
        return journal.withLock { journal in
            journal.pending += changes
            journal.queued += changes.count
            return journal.queued
        }
    }

    /// Runs `body` once the change numbered `number` is on the disk (at once when it is, or when it is 0), on the
    /// writer's thread otherwise.
    private func whenWritten(_ number: Int, _ body: @escaping @Sendable () -> Void) {
        let now = journal.withLock { journal -> Bool in
            guard number > journal.written else { return true }
            journal.waiting.append((number, body))
            return false
        }
        if now { body() }
    }

    /// Starts the writer unless it is on its way: it writes every change queued by then in one append (or the whole
    /// file, past the threshold), off the event loops.
    private func scheduleWrite() {
        guard file != nil else { return }
        let start = journal.withLock { journal -> Bool in
            defer { journal.scheduled = true }
            return !journal.scheduled
        }
        if start { writer.async { self.write() } }
    }

    /// The writer: appends what is queued, then runs what waited for it, until the queue is empty.
    private func write() {
        guard let file else { return }
        while true {
            // The registry's lock first (as `queue` takes them), so that a whole snapshot holds exactly the changes
            // taken from the queue with it.
            let batch = locked.withLock { state in
                journal.withLock { journal -> (changes: [ContactChange], last: Int, snapshot: [ContactRecord]?)? in
                    guard !journal.pending.isEmpty else {
                        journal.scheduled = false
                        return nil
                    }
                    defer { journal.pending = [] }
                    let whole =
                        journal.entries + journal.pending.count
                        > Self.compactionThreshold(contacts: state.registry.counts.contacts)
                    return (journal.pending, journal.queued, whole ? state.registry.allRecords : nil)
                }
            }
            guard let batch else { return }
            configuration.writeHook?()
            do throws(ContactFileError) {
                if let snapshot = batch.snapshot {
                    try file.replace(with: snapshot)
                } else {
                    try file.append(batch.changes)
                }
            } catch {
                // The relay goes on serving; what waited goes on too (the change is in memory), as before the journal.
                logger.error("cannot write the contact file", metadata: ["reason": "\(error)"])
            }
            let ready = journal.withLock { journal -> [@Sendable () -> Void] in
                journal.written = batch.last
                journal.entries = batch.snapshot == nil ? journal.entries + batch.changes.count : 0
                let ready = journal.waiting.filter { $0.number <= batch.last }.map(\.run)
                journal.waiting.removeAll { $0.number <= batch.last }
                return ready
            }
            for run in ready { run() }
        }
    }

    /// Waits until every change made so far is on the disk (the relay's shutdown).
    func flush() {
        guard file != nil else { return }
        scheduleWrite()
        writer.sync {}
    }
}
