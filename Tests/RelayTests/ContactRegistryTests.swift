import Hybrid
import Relay
import Testing

/// The wake channel's rules without NIO: registration, ownership proofs, wakes (also to a listener that connects
/// while a request waits), revocation, heartbeats, expiry.
struct ContactRegistryTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }
    static let routingID = try! RoutingID(bytes: [0xAA, 0xBB, 0xCC])
    static let day: Int64 = 86_400

    let secret = [UInt8](repeating: 0x5A, count: 32)
    var verifier: [UInt8] { ContactOwnership.verifier(listenerSecret: secret) }
    static func challenge(_ byte: UInt8) -> [UInt8] { .init(repeating: byte, count: 32) }

    /// A registry where connection 1 registered a contact; returns its ID.
    func registered(limits: ContactLimits = ContactLimits()) -> (ContactRegistry, [UInt8]) {
        var registry = ContactRegistry(limits: limits)
        _ = registry.listenerOpened(ConnectionID(1), challenge: Self.challenge(1), now: Self.at(0))
        let actions = registry.listenerMessage(
            ListenerMessage.register(verifier: verifier).bytes, from: ConnectionID(1), routingID: Self.routingID,
            now: Self.at(0), date: 1000, randomBytes: { .init(repeating: 0x11, count: $0) })
        let contactID = Self.routingID.bytes + [UInt8](repeating: 0x11, count: 29)
        // The new contact goes to the contact file before the answer.
        let record = Self.stored(actions.first)
        #expect(record?.hash == ContactOwnership.hash(contactID: contactID))
        #expect(record?.proved == false && record?.routingID == Self.routingID && record?.created == 1000)
        #expect(
            actions.dropFirst() == [
                .send(.registered(contactID: contactID), to: ConnectionID(1)), .close(ConnectionID(1), code: 1000),
            ])
        registry.listenerClosed(ConnectionID(1))
        #expect(registry.counts.contacts == 1)
        return (registry, contactID)
    }

    /// The record of a `.journal(.store(_))` action.
    static func stored(_ action: ContactRegistry.Action?) -> ContactRecord? {
        guard case .journal(.store(let record))? = action else { return nil }
        return record
    }

    /// Opens listener `id` and proves ownership with `proof` (the right one by default).
    func listen(
        _ registry: inout ContactRegistry, _ id: UInt64, contactID: [UInt8], proof: [UInt8]? = nil, at time: Double = 1
    ) -> [ContactRegistry.Action] {
        let challenge = Self.challenge(UInt8(id))
        let opened = registry.listenerOpened(ConnectionID(id), challenge: challenge, now: Self.at(time))
        #expect(opened == [.send(.challenge(challenge, heartbeatSeconds: 30), to: ConnectionID(id))])
        let proof = proof ?? ContactOwnership.proof(verifier: verifier, challenge: challenge, contactID: contactID)
        return registry.listenerMessage(
            ListenerMessage.listen(contactID: contactID, proof: proof).bytes, from: ConnectionID(id),
            routingID: Self.routingID, now: Self.at(time), date: 1000, randomBytes: { .init(repeating: 0, count: $0) })
    }

    @Test func aProvenListenerIsWokenByAContactRequest() throws {
        var (registry, contactID) = registered()
        // The first proof after the registration marks the contact proved, which is written to the file.
        let listened = listen(&registry, 2, contactID: contactID)
        #expect(listened.first == .send(.listening, to: ConnectionID(2)) && listened.count == 2)
        #expect(Self.stored(listened.last)?.proved == true)
        #expect(registry.contactRequested(contactID) == .known)
        let tunnelID = try TunnelID(bytes: .init(repeating: 3, count: 16))
        let wake = ListenerMessage.wake(routingID: Self.routingID, tunnelID: tunnelID, clientPayload: [0xA0])
        let actions = registry.contactTunnelOpened(
            ConnectionID(9), contactID: contactID, routingID: Self.routingID, tunnelID: tunnelID, clientPayload: [0xA0],
            now: Self.at(2), date: 1000)
        #expect(actions == [.send(wake, to: ConnectionID(2))])
        #expect(registry.isWaiting(ConnectionID(9)))
        // The phone joins before the wait ends: nothing to expire.
        registry.contactRequestEnded(ConnectionID(9))
        #expect(
            !registry.tick(now: Self.at(40), date: 1000).contains(
                .endContactRequest(ConnectionID(9), code: ListenerCloseCode.phoneUnreachable)))
    }

    @Test func forgedReplayedAndUnknownProofsAreRefused() {
        var (registry, contactID) = registered()
        #expect(
            listen(&registry, 2, contactID: contactID, proof: .init(repeating: 0, count: 32)) == [
                .close(ConnectionID(2), code: ListenerCloseCode.forgedProof)
            ])
        // A proof made for another connection's challenge.
        let replayed = ContactOwnership.proof(verifier: verifier, challenge: Self.challenge(7), contactID: contactID)
        #expect(
            listen(&registry, 3, contactID: contactID, proof: replayed) == [
                .close(ConnectionID(3), code: ListenerCloseCode.forgedProof)
            ])
        let unknown = Self.routingID.bytes + [UInt8](repeating: 0x22, count: 29)
        #expect(
            listen(&registry, 4, contactID: unknown) == [
                .close(ConnectionID(4), code: ListenerCloseCode.unknownContact)
            ])
        // A listener that was refused gets no wake.
        let actions = registry.contactTunnelOpened(
            ConnectionID(9), contactID: contactID, routingID: Self.routingID,
            tunnelID: try! TunnelID(bytes: .init(repeating: 3, count: 16)), clientPayload: [0xA0], now: Self.at(2),
            date: 1000)
        #expect(actions.isEmpty)
        #expect(registry.contactRequested(unknown) == .gone)
    }

    @Test func aListenerThatConnectsWhileTheRequestWaitsGetsTheWake() throws {
        var (registry, contactID) = registered()
        let tunnelID = try TunnelID(bytes: .init(repeating: 4, count: 16))
        #expect(
            registry.contactTunnelOpened(
                ConnectionID(9), contactID: contactID, routingID: Self.routingID, tunnelID: tunnelID,
                clientPayload: [0xA0], now: Self.at(0), date: 1000
            ).isEmpty)
        let wake = ListenerMessage.wake(routingID: Self.routingID, tunnelID: tunnelID, clientPayload: [0xA0])
        let listened = listen(&registry, 2, contactID: contactID, at: 5)
        #expect(listened.count == 3 && listened[1].isJournal)
        #expect(
            listened.first == .send(.listening, to: ConnectionID(2))
                && listened.last == .send(wake, to: ConnectionID(2)))
        // It drops, and comes back: the wake goes to the new connection too.
        registry.listenerClosed(ConnectionID(2))
        #expect(
            listen(&registry, 3, contactID: contactID, at: 8) == [
                .send(.listening, to: ConnectionID(3)), .send(wake, to: ConnectionID(3)),
            ])
        // Nobody joined within the wait: the request expires (its tunnel closes with 4404).
        #expect(
            registry.tick(now: Self.at(29), date: 1000).filter {
                $0 == .endContactRequest(ConnectionID(9), code: ListenerCloseCode.phoneUnreachable)
            }.isEmpty)
        #expect(
            registry.tick(now: Self.at(30), date: 1000).contains(
                .endContactRequest(ConnectionID(9), code: ListenerCloseCode.phoneUnreachable)))
        #expect(!registry.isWaiting(ConnectionID(9)))
    }

    @Test func aDeclinedWakeEndsItsRequestWith4410() throws {
        var (registry, contactID) = registered()
        _ = listen(&registry, 2, contactID: contactID)
        let tunnelID = try TunnelID(bytes: .init(repeating: 4, count: 16))
        _ = registry.contactTunnelOpened(
            ConnectionID(9), contactID: contactID, routingID: Self.routingID, tunnelID: tunnelID, clientPayload: [0xA0],
            now: Self.at(0), date: 1000)
        func decline(_ id: TunnelID, from connection: UInt64) -> [ContactRegistry.Action] {
            registry.listenerMessage(
                ListenerMessage.declined(tunnelID: id).bytes, from: ConnectionID(connection), routingID: Self.routingID,
                now: Self.at(1), date: 1000, randomBytes: { .init(repeating: 0, count: $0) })
        }
        // Another tunnel's ID, or a listener that was not sent the wake, declines nothing.
        #expect(decline(try TunnelID(bytes: .init(repeating: 5, count: 16)), from: 2).isEmpty)
        _ = registry.listenerOpened(ConnectionID(3), challenge: Self.challenge(3), now: Self.at(1))
        #expect(decline(tunnelID, from: 3) == [.close(ConnectionID(3), code: ListenerCloseCode.badMessage)])
        #expect(
            decline(tunnelID, from: 2) == [.endContactRequest(ConnectionID(9), code: ListenerCloseCode.unknownContact)])
        #expect(!registry.isWaiting(ConnectionID(9)))
        // The contact itself stays: other links are still served.
        #expect(registry.contactRequested(contactID) == .known)
    }

    @Test func revocationForgetsTheContactAndClosesItsListeners() throws {
        var (registry, contactID) = registered()
        _ = listen(&registry, 2, contactID: contactID)
        _ = registry.contactTunnelOpened(
            ConnectionID(9), contactID: contactID, routingID: Self.routingID,
            tunnelID: try TunnelID(bytes: .init(repeating: 4, count: 16)), clientPayload: [0xA0], now: Self.at(0),
            date: 1000)
        _ = registry.listenerOpened(ConnectionID(5), challenge: Self.challenge(5), now: Self.at(1))
        let proof = ContactOwnership.proof(verifier: verifier, challenge: Self.challenge(5), contactID: contactID)
        let actions = registry.listenerMessage(
            ListenerMessage.revoke(contactID: contactID, proof: proof).bytes, from: ConnectionID(5),
            routingID: Self.routingID, now: Self.at(1), date: 1000, randomBytes: { .init(repeating: 0, count: $0) })
        #expect(
            actions == [
                .journal(.forget(hash: ContactOwnership.hash(contactID: contactID))),
                .send(.revoked, to: ConnectionID(5)),
                .close(ConnectionID(5), code: 1000),
                .close(ConnectionID(2), code: ListenerCloseCode.unknownContact),
                .endContactRequest(ConnectionID(9), code: ListenerCloseCode.unknownContact),
            ])
        #expect(registry.contactRequested(contactID) == .gone)
        #expect(registry.counts.contacts == 0)
    }

    @Test func badMessagesAndOrderAreRefused() {
        var (registry, contactID) = registered()
        _ = registry.listenerOpened(ConnectionID(2), challenge: Self.challenge(2), now: Self.at(0))
        #expect(
            registry.listenerMessage(
                [0xFF], from: ConnectionID(2), routingID: Self.routingID, now: Self.at(0), date: 1000,
                randomBytes: { .init(repeating: 0, count: $0) }) == [
                    .close(ConnectionID(2), code: ListenerCloseCode.badMessage)
                ])
        // A heartbeat before the proof, or a second proof, is out of order.
        _ = registry.listenerOpened(ConnectionID(3), challenge: Self.challenge(3), now: Self.at(0))
        #expect(
            registry.listenerMessage(
                ListenerMessage.heartbeat.bytes, from: ConnectionID(3), routingID: Self.routingID, now: Self.at(0),
                date: 1000, randomBytes: { .init(repeating: 0, count: $0) }) == [
                    .close(ConnectionID(3), code: ListenerCloseCode.badMessage)
                ])
        _ = listen(&registry, 4, contactID: contactID)
        #expect(
            registry.listenerMessage(
                ListenerMessage.register(verifier: verifier).bytes, from: ConnectionID(4), routingID: Self.routingID,
                now: Self.at(1), date: 1000, randomBytes: { .init(repeating: 0, count: $0) }) == [
                    .close(ConnectionID(4), code: ListenerCloseCode.badMessage)
                ])
    }

    @Test func heartbeatsSilenceChallengesAndIdleExpiry() {
        var limits = ContactLimits()
        limits.idleExpiry = .seconds(10 * Self.day)
        var (registry, contactID) = registered(limits: limits)
        _ = listen(&registry, 2, contactID: contactID, at: 0)
        _ = registry.listenerOpened(ConnectionID(3), challenge: Self.challenge(3), now: Self.at(0))
        // The first tick sends a heartbeat to the proven listener; the silent challenge expires at 10 s.
        #expect(registry.tick(now: Self.at(1), date: 1000) == [.send(.heartbeat, to: ConnectionID(2))])
        #expect(
            registry.tick(now: Self.at(10), date: 1000) == [.close(ConnectionID(3), code: ListenerCloseCode.timedOut)])
        registry.listenerClosed(ConnectionID(3))
        // A listener that answers stays; one silent for three intervals is closed.
        #expect(
            registry.listenerMessage(
                ListenerMessage.heartbeat.bytes, from: ConnectionID(2), routingID: Self.routingID, now: Self.at(60),
                date: 1000, randomBytes: { .init(repeating: 0, count: $0) }
            ).isEmpty)
        #expect(registry.tick(now: Self.at(100), date: 1000) == [.send(.heartbeat, to: ConnectionID(2))])
        #expect(
            registry.tick(now: Self.at(150), date: 1000).contains(
                .close(ConnectionID(2), code: ListenerCloseCode.timedOut)))
        registry.listenerClosed(ConnectionID(2))
        // Without a listener, the contact expires after its idle time.
        let forgotten = ContactRegistry.Action.journal(.forget(hash: ContactOwnership.hash(contactID: contactID)))
        #expect(!registry.tick(now: Self.at(151), date: 1000 + 9 * Self.day).contains(forgotten))
        #expect(registry.tick(now: Self.at(152), date: 1000 + 10 * Self.day).contains(forgotten))
        #expect(registry.contactRequested(contactID) == .gone)
    }

    /// Issue 23, attack 1: one /24 registered 100,000 contacts in 128 s, after which every new phone got 4429 for
    /// 90 days. A network may register `registrationsPerNetwork` contacts within the window.
    @Test func registrationsPerNetworkAreBoundedWithinTheWindow() {
        var registry = ContactRegistry()
        var connection: UInt64 = 10
        func register(from network: String, date: Int64) -> [ContactRegistry.Action] {
            connection += 1
            _ = registry.listenerOpened(
                ConnectionID(connection), challenge: Self.challenge(1), now: Self.at(0), network: network)
            let actions = registry.listenerMessage(
                ListenerMessage.register(verifier: verifier).bytes, from: ConnectionID(connection),
                routingID: Self.routingID, now: Self.at(0), date: date,
                randomBytes: { count in (0..<count).map { _ in UInt8.random(in: 0...255) } })
            registry.listenerClosed(ConnectionID(connection))
            return actions
        }
        for number in 0..<8 {
            #expect(register(from: "203.0.113.0/24", date: 1000 + Int64(number)).first?.isJournal == true)
        }
        let refused = register(from: "203.0.113.0/24", date: 1100)
        #expect(refused == [.close(ConnectionID(connection), code: ListenerCloseCode.tooManyContacts)])
        #expect(
            register(from: "198.51.100.0/24", date: 1100).first?.isJournal == true, "another network is not held up")
        #expect(registry.counts.contacts == 9)
        // An hour after its first registration, the network may register again.
        #expect(register(from: "203.0.113.0/24", date: 1000 + 3600).first?.isJournal == true)
    }

    /// A registration nobody listens for is forgotten after a day; a proved contact stays for its idle time.
    @Test func unprovedContactsExpireAfterADay() {
        var (registry, proved) = registered()
        _ = listen(&registry, 2, contactID: proved)
        registry.listenerClosed(ConnectionID(2))
        _ = registry.listenerOpened(ConnectionID(3), challenge: Self.challenge(3), now: Self.at(0))
        _ = registry.listenerMessage(
            ListenerMessage.register(verifier: verifier).bytes, from: ConnectionID(3), routingID: Self.routingID,
            now: Self.at(0), date: 1000, randomBytes: { .init(repeating: 0x22, count: $0) })
        registry.listenerClosed(ConnectionID(3))
        let unproved = Self.routingID.bytes + [UInt8](repeating: 0x22, count: 29)
        #expect(registry.contactRequested(unproved) == .known)
        let forgotten = ContactRegistry.Action.journal(.forget(hash: ContactOwnership.hash(contactID: unproved)))
        #expect(registry.tick(now: Self.at(1), date: 1000 + Self.day - 1).filter(\.isJournal).isEmpty)
        #expect(registry.tick(now: Self.at(2), date: 1000 + Self.day) == [forgotten])
        #expect(registry.contactRequested(unproved) == .gone)
        #expect(registry.contactRequested(proved) == .known)
        // Records read from a file written before the field existed count as proved.
        let old = ContactRecord(hash: [1], sealedVerifier: [2], created: 0, lastUsed: 1000 + Self.day, proved: nil)
        var fromFile = ContactRegistry(records: [old])
        _ = fromFile.tick(now: Self.at(3), date: 1000 + 2 * Self.day)
        #expect(fromFile.counts.contacts == 1)
    }

    @Test func theNumberOfContactsIsBounded() {
        var limits = ContactLimits()
        limits.maximumContacts = 1
        var (registry, _) = registered(limits: limits)
        _ = registry.listenerOpened(ConnectionID(2), challenge: Self.challenge(2), now: Self.at(0))
        #expect(
            registry.listenerMessage(
                ListenerMessage.register(verifier: verifier).bytes, from: ConnectionID(2), routingID: Self.routingID,
                now: Self.at(0), date: 1000, randomBytes: { .init(repeating: 0x33, count: $0) }) == [
                    .close(ConnectionID(2), code: ListenerCloseCode.tooManyContacts)
                ])
    }

    /// Issue 23, attack 11: a relay whose routing ID is random took a listener naming any routing ID. The registry
    /// keeps the routing ID each contact was issued under; records from files written before that are filled in when
    /// their listener proves ownership, and until then the relay cannot tell (nil).
    @Test func theRoutingIDsOfKeptContactsAreKnown() throws {
        var (registry, contactID) = registered()
        let other = try RoutingID(hex: "0A0B0D")
        #expect(registry.holdsContacts(issuedUnder: Self.routingID) == true)
        #expect(registry.holdsContacts(issuedUnder: other) == false)
        _ = listen(&registry, 2, contactID: contactID)
        registry.listenerClosed(ConnectionID(2))
        // A record written before routing IDs were kept.
        let legacyID = other.bytes + [UInt8](repeating: 0x44, count: 29)
        let (_, legacySealed) = try #require(
            ContactOwnership.seal(verifier: verifier, contactID: legacyID).map { (legacyID, $0) })
        let legacy = ContactRecord(
            hash: ContactOwnership.hash(contactID: legacyID), sealedVerifier: legacySealed, created: 0, lastUsed: 1000,
            proved: nil)
        var fromFile = ContactRegistry(records: [legacy])
        #expect(fromFile.holdsContacts(issuedUnder: other) == nil)
        let listened = listen(&fromFile, 3, contactID: legacyID)
        #expect(Self.stored(listened.last)?.routingID == other)
        #expect(fromFile.holdsContacts(issuedUnder: other) == true)
        #expect(fromFile.holdsContacts(issuedUnder: Self.routingID) == false)
        // Revoked, the contact's routing ID is no longer held.
        registry.listenerClosed(ConnectionID(3))
        _ = registry.listenerOpened(ConnectionID(5), challenge: Self.challenge(5), now: Self.at(1))
        let proof = ContactOwnership.proof(verifier: verifier, challenge: Self.challenge(5), contactID: contactID)
        _ = registry.listenerMessage(
            ListenerMessage.revoke(contactID: contactID, proof: proof).bytes, from: ConnectionID(5),
            routingID: Self.routingID, now: Self.at(1), date: 1000, randomBytes: { .init(repeating: 0, count: $0) })
        #expect(registry.holdsContacts(issuedUnder: Self.routingID) == false)
    }

    /// Replaying the journal over contacts that already hold some of its changes gives the same contacts.
    @Test func journalChangesReplayIdempotently() {
        let a = ContactRecord(hash: [1], sealedVerifier: [2], created: 1, lastUsed: 1)
        var b = ContactRecord(hash: [3], sealedVerifier: [4], created: 2, lastUsed: 2)
        let first: [ContactChange] = [.store(a), .store(b)]
        b.lastUsed = 9
        let second: [ContactChange] = [.forget(hash: [1]), .store(b)]
        var once: [[UInt8]: ContactRecord] = [:]
        ContactChange.apply(first + second, to: &once)
        var twice = once
        ContactChange.apply(second, to: &twice)
        #expect(once == twice && once == [[3]: b])
    }
}
