import Hybrid

/// Settings of the relay's wake channel (`/cable/listen`, `/cable/contact`).
public struct ContactLimits: Hashable, Sendable {
    /// Contacts kept at once; a registration past it is refused (close code 4429).
    public var maximumContacts = 100_000
    /// A contact with no listener connected and no contact request for this long is forgotten (default 90 days):
    /// its contact requests then get 410, and the phone's listener 4410.
    public var idleExpiry = Duration.seconds(90 * 86_400)
    /// How long a contact request waits for the phone to join its tunnel, listener or not; then the tunnel closes
    /// with 4404 (``ListenerCloseCode/phoneUnreachable``).
    public var wakeWait = Duration.seconds(30)
    /// How often the relay sends a heartbeat to each listener; a listener silent for three intervals is closed
    /// (4408). Listeners answer every heartbeat.
    public var heartbeatInterval = Duration.seconds(30)
    /// How long a new listener connection has to answer the challenge (4408 after).
    public var challengeTimeout = Duration.seconds(10)
    /// Listener connections one contact may hold at once; a further one replaces the oldest.
    public var maximumListenersPerContact = 4
    /// Registrations one network (the relay's limit key: a /24 or a /64 by default) may make within
    /// ``registrationWindow``; a further one is refused with 4429. A phone registers once per link: one network
    /// registering 100,000 contacts in 128 s filled the relay for 90 days (issue 23, attack 1).
    public var registrationsPerNetwork = 8
    public var registrationWindow = Duration.seconds(3600)
    /// A contact no listener has proved ownership of within this long after its registration is forgotten (default
    /// a day): a phone listens right after it registers, and registrations nobody listens for must not stay 90 days.
    public var unprovedExpiry = Duration.seconds(86_400)

    public init() {}
}

/// What the relay keeps of one contact: never the contact ID, only its SHA-256, and the verifier sealed under a key
/// derived from the contact ID (``ContactOwnership``). Times are UNIX seconds (they outlive the process).
public struct ContactRecord: Hashable, Sendable {
    /// `SHA-256(contact ID)`.
    public var hash: [UInt8]
    /// The listener verifier, sealed with the contact ID.
    public var sealedVerifier: [UInt8]
    /// When it was registered.
    public var created: Int64
    /// When a listener last proved ownership (or stayed connected), or a client last asked for it.
    public var lastUsed: Int64
    /// Whether a listener has proved ownership since the registration: false until then. Records written before
    /// this field existed read as nil and count as proved.
    public var proved: Bool?
    /// The routing ID the contact ID starts with (the instance that issued it, which listeners name in
    /// `/cable/listen/{ROUTING_ID}`); nil in records written before it was kept, until a listener proves ownership.
    public var routingID: RoutingID?

    public init(
        hash: [UInt8], sealedVerifier: [UInt8], created: Int64, lastUsed: Int64, proved: Bool? = true,
        routingID: RoutingID? = nil
    ) {
        self.hash = hash
        self.sealedVerifier = sealedVerifier
        self.created = created
        self.lastUsed = lastUsed
        self.proved = proved
        self.routingID = routingID
    }
}

/// One change of the contacts, as the contact file's journal records it: replaying changes over a set of contacts
/// that already holds some of them gives the same result (each sets or removes one contact whole).
public enum ContactChange: Hashable, Sendable {
    /// Adds the contact, or replaces the one with its hash.
    case store(ContactRecord)
    /// Forgets the contact with this hash (revoked or expired).
    case forget(hash: [UInt8])

    /// `changes` applied to `records` (keyed by hash), in order.
    public static func apply(_ changes: some Sequence<ContactChange>, to records: inout [[UInt8]: ContactRecord]) {
        for change in changes {
            switch change {
            case .store(let record): records[record.hash] = record
            case .forget(let hash): records[hash] = nil
            }
        }
    }
}

/// The relay's wake channel as a pure state machine: listener connections (challenge, registration, ownership
/// proof, heartbeats, revocation) and contact requests (wake the listeners, wait for the phone) in; messages,
/// closes and changes for the contact file out. Time, wall-clock dates and randomness are parameters; the I/O layer
/// (`RelayContacts`) carries out the actions and owns the tunnels themselves (``RelayRegistry``).
///
/// A contact request's wake goes to every listener of the contact that has proved ownership, and to each one that
/// does so later while the request waits (a listener reconnecting mid-wait still gets it).
public struct ContactRegistry: Sendable {
    /// What the I/O layer must do.
    public enum Action: Hashable, Sendable {
        /// Send this message to that listener connection.
        case send(ListenerMessage, to: ConnectionID)
        /// Close that listener connection with this code.
        case close(ConnectionID, code: UInt16)
        /// End the contact request on that connection: close its tunnel with `code` unless the phone has joined it
        /// (4404 after ``ContactLimits/wakeWait``; 4410 when the phone declined the wake or revoked its contact).
        case endContactRequest(ConnectionID, code: UInt16)
        /// A contact changed: record it in the contact file before the actions that follow (a phone told
        /// "registered" finds its contact after a restart).
        case journal(ContactChange)

        /// Whether this is a change for the contact file.
        public var isJournal: Bool {
            if case .journal = self { return true }
            return false
        }
    }

    /// The answer to `/cable/contact/{CONTACT_ID}`.
    public enum ContactDecision: Hashable, Sendable {
        /// The contact is known: open the tunnel, then call ``contactTunnelOpened(_:contactID:routingID:tunnelID:clientPayload:now:date:)``.
        case known
        /// Unknown, revoked or expired: answer 410.
        case gone
    }

    private enum ListenerState: Hashable, Sendable {
        /// Connected from `network`, sent the challenge; the answer is due by `deadline`.
        case challenged(challenge: [UInt8], deadline: ContinuousClock.Instant, network: String)
        /// Proved ownership of the contact with this hash.
        case listening(hash: [UInt8], since: ContinuousClock.Instant, lastHeard: ContinuousClock.Instant)
        /// Done (registered or revoked, or refused): its close is on the way.
        case finished
    }

    private struct PendingWake: Sendable {
        var hash: [UInt8]
        var wake: ListenerMessage
        var deadline: ContinuousClock.Instant
        var deliveredTo: Set<ConnectionID>
    }

    public let limits: ContactLimits
    private var records: [[UInt8]: ContactRecord] = [:]
    /// How many records name each routing ID, and how many name none (written before routing IDs were kept).
    private var routingIDs: [RoutingID: Int] = [:]
    private var recordsWithoutRoutingID = 0
    private var listeners: [ConnectionID: ListenerState] = [:]
    private var listenersByContact: [[UInt8]: [ConnectionID]] = [:]
    private var pending: [ConnectionID: PendingWake] = [:]
    private var lastHeartbeat: ContinuousClock.Instant?
    /// Each network's registrations within the window, oldest first (UNIX seconds).
    private var registrations: [String: [Int64]] = [:]

    /// A registry holding `records` (read from the contact file).
    public init(limits: ContactLimits = ContactLimits(), records: [ContactRecord] = []) {
        self.limits = limits
        for record in records { put(record) }
    }

    /// Contacts kept now, listener connections open now (proved or not), contact requests waiting.
    public var counts: (contacts: Int, listeners: Int, waiting: Int) { (records.count, listeners.count, pending.count) }

    /// The contacts, for the contact file.
    public var allRecords: [ContactRecord] {
        records.values.sorted {
            $0.created != $1.created ? $0.created < $1.created : $0.hash.lexicographicallyPrecedes($1.hash)
        }
    }

    /// Whether some contact kept here was issued under `routingID`. `nil` when that cannot be told: some records
    /// were written before routing IDs were kept (they are filled in as their listeners prove ownership).
    public func holdsContacts(issuedUnder routingID: RoutingID) -> Bool? {
        if routingIDs[routingID] != nil { return true }
        return recordsWithoutRoutingID > 0 ? nil : false
    }

    /// Whether `connection` is a listener connection.
    public func isListener(_ connection: ConnectionID) -> Bool { listeners[connection] != nil }

    /// Whether `connection` is a contact request still waiting for its phone.
    public func isWaiting(_ connection: ConnectionID) -> Bool { pending[connection] != nil }

    // MARK: Listeners

    /// A listener connection's WebSocket is open: send it `challenge` (32 random bytes). `network` is the
    /// client's network as the relay's per-network limits count it.
    public mutating func listenerOpened(
        _ connection: ConnectionID, challenge: [UInt8], now: ContinuousClock.Instant, network: String = ""
    ) -> [Action] {
        listeners[connection] = .challenged(
            challenge: challenge, deadline: now + limits.challengeTimeout, network: network)
        let seconds = Int(max(1, min(86_400, limits.heartbeatInterval.components.seconds)))
        return [.send(.challenge(challenge, heartbeatSeconds: seconds), to: connection)]
    }

    /// A whole binary message on a listener connection.
    ///
    /// - Parameters:
    ///   - routingID: this relay's routing ID, the first 3 bytes of a new contact ID.
    ///   - randomBytes: the 29 random bytes of a new contact ID.
    ///   - date: the wall clock, UNIX seconds.
    public mutating func listenerMessage(
        _ bytes: [UInt8], from connection: ConnectionID, routingID: RoutingID, now: ContinuousClock.Instant,
        date: Int64, randomBytes: (Int) -> [UInt8]
    ) -> [Action] {
        guard let state = listeners[connection] else { return [] }
        let message: ListenerMessage
        do throws(ListenerMessageError) {
            message = try ListenerMessage(bytes: bytes)
        } catch {
            return refuse(connection, code: ListenerCloseCode.badMessage)
        }
        switch (state, message) {
        case (.challenged(_, _, let network), .register(let verifier)):
            guard records.count < limits.maximumContacts else {
                return refuse(connection, code: ListenerCloseCode.tooManyContacts)
            }
            let windowStart = date - Int64(limits.registrationWindow.components.seconds)
            var recent = registrations[network, default: []].filter { $0 > windowStart }
            guard recent.count < limits.registrationsPerNetwork else {
                registrations[network] = recent
                return refuse(connection, code: ListenerCloseCode.tooManyContacts)
            }
            recent.append(date)
            registrations[network] = recent
            var contactID: [UInt8]
            var hash: [UInt8]
            repeat {
                contactID = routingID.bytes + randomBytes(ContactOwnership.randomLength)
                hash = ContactOwnership.hash(contactID: contactID)
            } while records[hash] != nil
            guard contactID.count == ContactOwnership.contactIDLength,
                let sealed = ContactOwnership.seal(verifier: verifier, contactID: contactID)
            else { return refuse(connection, code: ListenerCloseCode.badMessage) }
            let record = ContactRecord(
                hash: hash, sealedVerifier: sealed, created: date, lastUsed: date, proved: false, routingID: routingID)
            put(record)
            listeners[connection] = .finished
            // Written before the answer goes out: a phone told "registered" finds its contact after a restart.
            return [
                .journal(.store(record)), .send(.registered(contactID: contactID), to: connection),
                .close(connection, code: 1000),
            ]
        case (.challenged(let challenge, _, _), .listen(let contactID, let proof)):
            let hash = ContactOwnership.hash(contactID: contactID)
            switch verify(contactID: contactID, hash: hash, proof: proof, challenge: challenge) {
            case .unknown: return refuse(connection, code: ListenerCloseCode.unknownContact)
            case .forged: return refuse(connection, code: ListenerCloseCode.forgedProof)
            case .valid: break
            }
            var actions: [Action] = [.send(.listening, to: connection)]
            if var record = records[hash], record.proved == false || record.routingID == nil {
                record.proved = true
                record.routingID =
                    record.routingID ?? (try? RoutingID(bytes: Array(contactID.prefix(RoutingID.byteCount))))
                put(record)
                actions.append(.journal(.store(record)))
            }
            var held = listenersByContact[hash, default: []]
            if held.count >= limits.maximumListenersPerContact, let oldest = held.first {
                held.removeFirst()
                listeners[oldest] = .finished
                actions.append(.close(oldest, code: 1000))
            }
            held.append(connection)
            listenersByContact[hash] = held
            listeners[connection] = .listening(hash: hash, since: now, lastHeard: now)
            actions += touch(hash, date: date)
            // Wakes that wait for this contact go to the new listener too.
            for (requester, wake) in pending where wake.hash == hash && !wake.deliveredTo.contains(connection) {
                pending[requester]?.deliveredTo.insert(connection)
                actions.append(.send(wake.wake, to: connection))
            }
            return actions
        case (.challenged(let challenge, _, _), .revoke(let contactID, let proof)):
            let hash = ContactOwnership.hash(contactID: contactID)
            switch verify(contactID: contactID, hash: hash, proof: proof, challenge: challenge) {
            case .unknown: return refuse(connection, code: ListenerCloseCode.unknownContact)
            case .forged: return refuse(connection, code: ListenerCloseCode.forgedProof)
            case .valid: break
            }
            remove(hash)
            listeners[connection] = .finished
            var actions: [Action] = [
                .journal(.forget(hash: hash)), .send(.revoked, to: connection), .close(connection, code: 1000),
            ]
            for other in listenersByContact.removeValue(forKey: hash) ?? [] {
                listeners[other] = .finished
                actions.append(.close(other, code: ListenerCloseCode.unknownContact))
            }
            for (requester, wake) in pending where wake.hash == hash {
                pending[requester] = nil
                actions.append(.endContactRequest(requester, code: ListenerCloseCode.unknownContact))
            }
            return actions
        case (.listening(let hash, let since, _), .heartbeat):
            listeners[connection] = .listening(hash: hash, since: since, lastHeard: now)
            return []
        case (.listening(let hash, _, _), .declined(let tunnelID)):
            // Only a wake this listener was sent, for its own contact, can be declined.
            guard
                let requester = pending.first(where: { _, wake in
                    guard case .wake(_, tunnelID, _) = wake.wake else { return false }
                    return wake.hash == hash && wake.deliveredTo.contains(connection)
                })?.key
            else { return [] }
            pending[requester] = nil
            return [.endContactRequest(requester, code: ListenerCloseCode.unknownContact)]
        case (.finished, _):
            return []
        default:
            return refuse(connection, code: ListenerCloseCode.badMessage)
        }
    }

    /// A listener connection is gone.
    public mutating func listenerClosed(_ connection: ConnectionID) {
        guard let state = listeners.removeValue(forKey: connection) else { return }
        if case .listening(let hash, _, _) = state {
            listenersByContact[hash]?.removeAll { $0 == connection }
            if listenersByContact[hash]?.isEmpty == true { listenersByContact[hash] = nil }
        }
    }

    // MARK: Contact requests

    /// `/cable/contact/{CONTACT_ID}`: whether the contact is known (the request's tunnel may open) or gone (410).
    public func contactRequested(_ contactID: [UInt8]) -> ContactDecision {
        records[ContactOwnership.hash(contactID: contactID)] == nil ? .gone : .known
    }

    /// The contact request's tunnel is open (registered as `tunnelID` under this relay's `routingID`): wake the
    /// contact's listeners, and give the phone ``ContactLimits/wakeWait`` to join.
    public mutating func contactTunnelOpened(
        _ connection: ConnectionID, contactID: [UInt8], routingID: RoutingID, tunnelID: TunnelID,
        clientPayload: [UInt8], now: ContinuousClock.Instant, date: Int64
    ) -> [Action] {
        let hash = ContactOwnership.hash(contactID: contactID)
        guard records[hash] != nil else {
            return [.endContactRequest(connection, code: ListenerCloseCode.unknownContact)]
        }
        let wake = ListenerMessage.wake(routingID: routingID, tunnelID: tunnelID, clientPayload: clientPayload)
        let targets = listenersByContact[hash] ?? []
        pending[connection] = PendingWake(
            hash: hash, wake: wake, deadline: now + limits.wakeWait, deliveredTo: Set(targets))
        return targets.map { .send(wake, to: $0) } + touch(hash, date: date)
    }

    /// The phone joined the tunnel of the contact request on `connection`, or the tunnel ended: stop waiting.
    public mutating func contactRequestEnded(_ connection: ConnectionID) {
        pending[connection] = nil
    }

    // MARK: Time

    /// Expired waits and challenges, silent listeners, heartbeats due, idle contacts.
    public mutating func tick(now: ContinuousClock.Instant, date: Int64) -> [Action] {
        var actions: [Action] = []
        for (requester, wake) in pending where now >= wake.deadline {
            pending[requester] = nil
            actions.append(.endContactRequest(requester, code: ListenerCloseCode.phoneUnreachable))
        }
        let silence = limits.heartbeatInterval * 3
        for (connection, state) in listeners {
            switch state {
            case .challenged(_, let deadline, _) where now >= deadline:
                actions += refuse(connection, code: ListenerCloseCode.timedOut)
            case .listening(_, _, let lastHeard) where now - lastHeard >= silence:
                actions += refuse(connection, code: ListenerCloseCode.timedOut)
            default:
                break
            }
        }
        if lastHeartbeat.map({ now - $0 >= limits.heartbeatInterval }) ?? true {
            lastHeartbeat = now
            for (connection, state) in listeners {
                if case .listening = state { actions.append(.send(.heartbeat, to: connection)) }
            }
        }
        let expiry = Int64(limits.idleExpiry.components.seconds)
        let unprovedExpiry = Int64(limits.unprovedExpiry.components.seconds)
        let windowStart = date - Int64(limits.registrationWindow.components.seconds)
        registrations = registrations.compactMapValues { dates in
            let recent = dates.filter { $0 > windowStart }
            return recent.isEmpty ? nil : recent
        }
        for (hash, record) in records {
            if record.proved == false, date - record.created >= unprovedExpiry {
                remove(hash)
                actions.append(.journal(.forget(hash: hash)))
            } else if listenersByContact[hash] != nil {
                // A listener that stays connected keeps its contact alive; the date is refreshed once a day.
                if date - record.lastUsed >= 86_400 {
                    var record = record
                    record.lastUsed = date
                    put(record)
                    actions.append(.journal(.store(record)))
                }
            } else if date - record.lastUsed >= expiry {
                remove(hash)
                actions.append(.journal(.forget(hash: hash)))
            }
        }
        return actions
    }

    // MARK: Helpers

    private enum Verification { case unknown, forged, valid }

    private func verify(contactID: [UInt8], hash: [UInt8], proof: [UInt8], challenge: [UInt8]) -> Verification {
        guard let record = records[hash],
            let verifier = ContactOwnership.unseal(record.sealedVerifier, contactID: contactID)
        else { return .unknown }
        return ContactOwnership.verify(proof: proof, verifier: verifier, challenge: challenge, contactID: contactID)
            ? .valid : .forged
    }

    /// Marks a contact used; the contact file records it at most once an hour per contact.
    private mutating func touch(_ hash: [UInt8], date: Int64) -> [Action] {
        guard var record = records[hash], date - record.lastUsed >= 3600 else { return [] }
        record.lastUsed = date
        put(record)
        return [.journal(.store(record))]
    }

    /// Adds or replaces a record, keeping the routing ID counts.
    private mutating func put(_ record: ContactRecord) {
        remove(record.hash)
        records[record.hash] = record
        if let routingID = record.routingID {
            routingIDs[routingID, default: 0] += 1
        } else {
            recordsWithoutRoutingID += 1
        }
    }

    private mutating func remove(_ hash: [UInt8]) {
        guard let old = records.removeValue(forKey: hash) else { return }
        if let routingID = old.routingID {
            routingIDs[routingID, default: 1] -= 1
            if routingIDs[routingID] == 0 { routingIDs[routingID] = nil }
        } else {
            recordsWithoutRoutingID -= 1
        }
    }

    private mutating func refuse(_ connection: ConnectionID, code: UInt16) -> [Action] {
        listenerClosed(connection)
        listeners[connection] = .finished
        return [.close(connection, code: code)]
    }
}
