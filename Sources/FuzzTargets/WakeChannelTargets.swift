import CBOR
import Hybrid
import Relay

/// The wake channel of linked phones: the `X-caBLE-Client-Payload` header a relay reads from any client, and the
/// listener messages and state machine a relay runs for any phone.
enum WakeChannelTargets {
    private static let keys = SeededBytes(seed: 6)
    private static let listenerSecret = keys.bytes(32)
    private static let verifier = ContactOwnership.verifier(listenerSecret: listenerSecret)
    private static let routingID = (try? RoutingID(bytes: [0xAA, 0xBB, 0xCC]))!
    /// The contact the state machine target starts with (registered with `listenerSecret`).
    private static let contactID = routingID.bytes + keys.bytes(ContactOwnership.randomLength)
    private static let tunnelID = (try? TunnelID(bytes: keys.bytes(TunnelID.byteCount)))!

    /// The challenge connection `id` gets (fixed, so that seeds can carry valid proofs).
    private static func challenge(_ id: UInt8) -> [UInt8] {
        [UInt8](repeating: id, count: ListenerMessage.challengeLength)
    }

    // MARK: Client payload

    static let clientPayload: FuzzTarget = FuzzTarget(
        name: "client-payload",
        summary: "X-caBLE-Client-Payload as header text and as CBOR: accepted payloads re-encode and round-trip",
        seeds: {
            let payloads = [HybridRequestType.getAssertion, .makeCredential, HybridRequestType(rawValue: "dcp")]
                .compactMap { try? ClientPayload(linkID: keys.bytes(8), clientNonce: keys.bytes(16), requestType: $0) }
            return payloads.map(\.cbor) + payloads.map { Array($0.headerValue.utf8) }
                + [Array(payloads[0].headerValue.lowercased().utf8), [0xA0], Array("A0".utf8)]
        },
        run: { input in
            for candidate in [
                try? ClientPayload(cbor: input),
                try? ClientPayload(headerValue: String(decoding: input, as: UTF8.self)),
            ] {
                guard let payload = candidate else { continue }
                expect(payload.linkID.count == 8 && payload.clientNonce.count == 16, "a payload of the wrong sizes")
                expect((try? ClientPayload(cbor: payload.cbor)) == payload, "a client payload changed in a round trip")
                expect(
                    (try? ClientPayload(headerValue: payload.headerValue)) == payload,
                    "a client payload header changed in a round trip")
            }
        })

    // MARK: Listener messages and the relay's contact registry

    static let listenerMessages: FuzzTarget = FuzzTarget(
        name: "listener-messages",
        summary: "listener messages (round trips) and the relay's contact registry driven by them: wakes only "
            + "reach listeners that proved ownership",
        seeds: {
            let proof1 = ContactOwnership.proof(verifier: verifier, challenge: challenge(1), contactID: contactID)
            let listen1: [UInt8] = [1 << 4 | 1] + ListenerMessage.listen(contactID: contactID, proof: proof1).bytes
            let forged: [UInt8] =
                [1 << 4 | 2] + ListenerMessage.listen(contactID: contactID, proof: keys.bytes(32)).bytes
            let register: [UInt8] = [1 << 4 | 3] + ListenerMessage.register(verifier: keys.bytes(32)).bytes
            let revoke: [UInt8] =
                [1 << 4 | 1]
                + ListenerMessage.revoke(
                    contactID: contactID,
                    proof: ContactOwnership.proof(verifier: verifier, challenge: challenge(1), contactID: contactID)
                ).bytes
            let heartbeat: [UInt8] = [1 << 4 | 1] + ListenerMessage.heartbeat.bytes
            let declined: [UInt8] = [1 << 4 | 1] + ListenerMessage.declined(tunnelID: tunnelID).bytes
            let open1: [UInt8] = [0 << 4 | 1]
            let open2: [UInt8] = [0 << 4 | 2]
            let open3: [UInt8] = [0 << 4 | 3]
            let contact: [UInt8] = [3 << 4 | 9]
            let tick: [UInt8] = [4 << 4 | 15]
            let close1: [UInt8] = [2 << 4 | 1]
            return [
                FuzzInput.chunks([open1, listen1, contact, heartbeat, tick, close1]),
                FuzzInput.chunks([open1, listen1, contact, declined, contact, tick]),
                FuzzInput.chunks([contact, open1, open2, forged, listen1, tick, tick, tick]),
                FuzzInput.chunks([open3, register, open1, revoke, contact]),
                ListenerMessage.wake(routingID: routingID, tunnelID: tunnelID, clientPayload: [0xA0]).bytes,
                ListenerMessage.challenge(challenge(1), heartbeatSeconds: 30).bytes,
            ]
        },
        run: { input in
            if let message = try? ListenerMessage(bytes: input) {
                expect(
                    (try? ListenerMessage(bytes: message.bytes)) == message,
                    "a listener message changed in a round trip")
            }
            runRegistry(input)
        })

    /// Chunks of events: the first byte's high nibble is the event, its low nibble the connection (1–15).
    /// 0 opens a listener, 1 a message (the rest of the chunk), 2 closes, 3 a contact request (for the known contact,
    /// or for another when the chunk has more bytes), 4 a tick `low nibble` seconds later.
    private static func runRegistry(_ input: [UInt8]) {
        var limits = ContactLimits()
        limits.maximumContacts = 4
        var registry = ContactRegistry(
            limits: limits,
            records: [
                ContactRecord(
                    hash: ContactOwnership.hash(contactID: contactID),
                    sealedVerifier: ContactOwnership.seal(verifier: verifier, contactID: contactID) ?? [],
                    created: 0, lastUsed: 0)
            ])
        let start = ContinuousClock.Instant.now
        var seconds = 0
        var proven = Set<ConnectionID>()
        var fuzz = FuzzInput(input)
        func check(_ actions: [ContactRegistry.Action]) {
            for action in actions {
                switch action {
                case .send(.listening, let to): proven.insert(to)
                case .send(.wake, let to): expect(proven.contains(to), "a wake went to a listener that proved nothing")
                case .close(let id, _): proven.remove(id)
                default: break
                }
            }
        }
        while let chunk = fuzz.chunk(), let head = chunk.first {
            let connection = ConnectionID(UInt64(head & 0x0F))
            let now = start + .seconds(seconds)
            switch head >> 4 {
            case 0:
                check(registry.listenerOpened(connection, challenge: challenge(head & 0x0F), now: now))
            case 1:
                check(
                    registry.listenerMessage(
                        Array(chunk.dropFirst()), from: connection, routingID: routingID, now: now,
                        date: Int64(seconds),
                        randomBytes: { keys.bytes($0) }))
            case 2:
                registry.listenerClosed(connection)
                registry.contactRequestEnded(connection)
                proven.remove(connection)
            case 3:
                let id = chunk.count > 1 ? routingID.bytes + Array(chunk.dropFirst()) : contactID
                if registry.contactRequested(id) == .known {
                    check(
                        registry.contactTunnelOpened(
                            connection, contactID: id, routingID: routingID, tunnelID: tunnelID, clientPayload: [0xA0],
                            now: now, date: Int64(seconds)))
                }
            case 4:
                seconds += Int(head & 0x0F) * 5
                check(registry.tick(now: start + .seconds(seconds), date: Int64(seconds)))
            default:
                break
            }
            let counts = registry.counts
            expect(counts.contacts <= limits.maximumContacts, "more contacts than the limit")
        }
    }
}
