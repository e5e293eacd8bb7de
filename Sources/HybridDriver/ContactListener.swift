import Foundation
import Hybrid
import HybridIO

/// Why registering, listening or revoking on a relay's wake channel failed.
public enum ContactListenerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The relay could not be reached, refused the connection, or the connection failed.
    case tunnel(TunnelError)
    /// The relay sent something this protocol does not allow here.
    case unexpectedMessage(String)
    /// The relay does not know the contact (revoked, expired after its idle time, or another relay's): register
    /// again, and link the computers again.
    case unknownContact
    /// The relay refused the ownership proof (the listener secret is not the one registered).
    case proofRefused
    /// The relay refused with another code of ``ListenerCloseCode``.
    case refused(code: UInt16)

    public var description: String {
        switch self {
        case .tunnel(let error): error.description
        case .unexpectedMessage(let what): "the relay sent an unexpected message: \(what)"
        case .unknownContact:
            "the relay does not know this phone's contact (revoked, expired or registered elsewhere); "
                + "link the computers again with `passkey scan --link`"
        case .proofRefused: "the relay refused this phone's ownership proof"
        case .refused(let code):
            "the relay closed the listener with code \(code)"
                + (ListenerCloseCode.describe(code).map { ": \($0)" } ?? "")
        }
    }

    /// A refusal the listener must not retry.
    public var isFinal: Bool {
        switch self {
        case .unknownContact, .proofRefused: true
        case .refused(let code): code == ListenerCloseCode.badMessage
        case .tunnel(.refused(let status)): status == 404 || status == 400
        case .tunnel, .unexpectedMessage: false
        }
    }

    init(_ error: TunnelError) {
        switch error {
        case .closedByRelay(ListenerCloseCode.unknownContact): self = .unknownContact
        case .closedByRelay(ListenerCloseCode.forgedProof): self = .proofRefused
        case .closedByRelay(let code): self = .refused(code: code)
        default: self = .tunnel(error)
        }
    }
}

/// A wake from the relay: a linked client waits in the tunnel `tunnelID` (routing ID `routingID`) with this payload.
public struct ContactWake: Hashable, Sendable {
    public var routingID: RoutingID
    public var tunnelID: TunnelID
    public var clientPayload: ClientPayload
}

/// What the listener reports while it runs.
public enum ContactListenerEvent: Hashable, Sendable {
    /// Connecting to the relay (attempt number, from 1).
    case connecting(attempt: Int)
    /// The relay accepted the ownership proof: wakes will arrive.
    case listening
    /// A wake arrived for this link ID; it is being served.
    case woken(linkID: [UInt8])
    /// A wake could not be used: its client payload does not parse (the value says why).
    case badWake(String)
    /// A wake for a link this phone no longer has was declined: the relay tells the computer (4410), which forgets
    /// the link.
    case declined(linkID: [UInt8])
    /// The connection ended (the reason given); the next attempt follows after `retryIn`.
    case disconnected(reason: String, retryIn: Duration)
}

/// Exponential back-off with jitter for reconnecting: the n-th wait is drawn uniformly from [d/2, d] with
/// d = min(maximum, initial × 2ⁿ) ("equal jitter"), so that many phones cut off at once do not come back in step.
public struct ReconnectBackoff: Hashable, Sendable {
    public var initial: Duration
    public var maximum: Duration
    private(set) var failures = 0

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The next wait; `unitRandom` is a uniform draw from [0, 1).
    public mutating func next(unitRandom: Double) -> Duration {
        let exponent = min(failures, 30)
        failures += 1
        let ceiling = min(maximum, initial * (1 << exponent))
        let fraction = 0.5 + 0.5 * min(max(unitRandom, 0), 1)
        return ceiling * fraction
    }

    /// A connection succeeded: the next failure starts from `initial` again.
    public mutating func reset() { failures = 0 }
}

/// The phone's end of a self-hosted relay's wake channel (`/cable/listen`, Docs/Relay.md): registration, ownership
/// proofs, and the long-lived listener that reconnects with back-off and hands each wake to the caller. It
/// registers on `/cable/listen` and listens and revokes on `/cable/listen/{ROUTING_ID}`, the routing ID its contact
/// ID starts with (``ListenerPath``), so that a cluster's balancer reaches the instance that keeps the contact.
public struct ContactListener: Sendable {
    /// The relay's base URL.
    public var relay: TunnelServerBaseURL
    public var environment: HybridEnvironment
    /// Opening the WebSocket, and the relay's answers during the exchange.
    public var timeout: Duration

    public init(relay: TunnelServerBaseURL, environment: HybridEnvironment, timeout: Duration = .seconds(10)) {
        self.relay = relay
        self.environment = environment
        self.timeout = timeout
    }

    /// The URL of `path` on the relay: ``ListenerPath/registration`` to register, the contact's routing ID to listen
    /// and revoke (a cluster's balancer sends that to the instance that issued the contact).
    func url(_ path: ListenerPath) -> String { relay.string + path.path }

    /// Registers a contact for the listener secret's verifier; returns the contact ID the relay made.
    public func register(listenerSecret: [UInt8]) async throws(ContactListenerError) -> [UInt8] {
        try await withTunnel(ListenerPath()) { tunnel throws(ContactListenerError) in
            _ = try await challenge(on: tunnel)
            try await send(.register(verifier: ContactOwnership.verifier(listenerSecret: listenerSecret)), on: tunnel)
            guard case .registered(let contactID) = try await receive(on: tunnel, timeout: timeout) else {
                throw .unexpectedMessage("not a registration")
            }
            return contactID
        }
    }

    /// Revokes the contact: from now on the relay answers its contact requests with 410 (the computers forget their
    /// links) and refuses its listeners.
    public func revoke(contactID: [UInt8], listenerSecret: [UInt8]) async throws(ContactListenerError) {
        try await withTunnel(ListenerPath(contactID: contactID)) { tunnel throws(ContactListenerError) in
            let challenge = try await challenge(on: tunnel)
            let verifier = ContactOwnership.verifier(listenerSecret: listenerSecret)
            try await send(
                .revoke(
                    contactID: contactID,
                    proof: ContactOwnership.proof(verifier: verifier, challenge: challenge.bytes, contactID: contactID)),
                on: tunnel)
            guard case .revoked = try await receive(on: tunnel, timeout: timeout) else {
                throw .unexpectedMessage("not a revocation")
            }
        }
    }

    /// Runs `body` on a fresh connection to `path`, closing it afterwards whatever happened.
    private func withTunnel<T>(
        _ path: ListenerPath, _ body: (any HybridTunnel) async throws(ContactListenerError) -> T
    ) async throws(ContactListenerError) -> T {
        let tunnel = try await open(path)
        let result: Result<T, ContactListenerError>
        do throws(ContactListenerError) {
            result = .success(try await body(tunnel))
        } catch {
            result = .failure(error)
        }
        await tunnel.close()
        return try result.get()
    }

    /// Listens until the relay refuses for good (unknown contact, refused proof) or the task is cancelled: connects,
    /// proves ownership, answers heartbeats, and passes each wake to `onWake`, which returns whether it serves it
    /// (false: the phone no longer has the link, and the wake is declined). `onWake` must return quickly: serve the
    /// wake elsewhere, the heartbeats must go on. A connection that ends is retried after `backoff`'s next wait.
    public func listen(
        contactID: [UInt8], listenerSecret: [UInt8], backoff: ReconnectBackoff = ReconnectBackoff(),
        onEvent: @escaping @Sendable (ContactListenerEvent) -> Void,
        onWake: @escaping @Sendable (ContactWake) -> Bool
    ) async throws(ContactListenerError) {
        var backoff = backoff
        var attempt = 0
        let verifier = ContactOwnership.verifier(listenerSecret: listenerSecret)
        while !Task.isCancelled {
            attempt += 1
            onEvent(.connecting(attempt: attempt))
            let reason: String
            do throws(ContactListenerError) {
                try await listenOnce(
                    contactID: contactID, verifier: verifier,
                    onListening: {
                        backoff.reset()
                        onEvent(.listening)
                    }, onEvent: onEvent, onWake: onWake)
                reason = "the relay closed the connection"
            } catch {
                if error.isFinal { throw error }
                if case .tunnel(.cancelled) = error { return }
                reason = error.description
            }
            if Task.isCancelled { return }
            let wait = backoff.next(unitRandom: unitRandom())
            onEvent(.disconnected(reason: reason, retryIn: wait))
            do {
                try await environment.sleep(wait)
            } catch {
                return
            }
        }
    }

    /// One connection: challenge, proof, then heartbeats and wakes until it ends.
    private func listenOnce(
        contactID: [UInt8], verifier: [UInt8], onListening: () -> Void,
        onEvent: @Sendable (ContactListenerEvent) -> Void, onWake: @Sendable (ContactWake) -> Bool
    ) async throws(ContactListenerError) {
        try await withTunnel(ListenerPath(contactID: contactID)) { tunnel throws(ContactListenerError) in
            let (challenge, heartbeat) = try await self.challenge(on: tunnel)
            try await send(
                .listen(
                    contactID: contactID,
                    proof: ContactOwnership.proof(verifier: verifier, challenge: challenge, contactID: contactID)),
                on: tunnel)
            guard case .listening = try await receive(on: tunnel, timeout: timeout) else {
                throw .unexpectedMessage("not the answer to the ownership proof")
            }
            onListening()
            // A relay silent for three heartbeats is gone: reconnect.
            while true {
                let message: ListenerMessage
                do throws(ContactListenerError) {
                    message = try await receive(on: tunnel, timeout: heartbeat * 3)
                } catch {
                    if case .tunnel(.timedOut) = error { throw .tunnel(.timedOut("for the relay's heartbeat")) }
                    throw error
                }
                switch message {
                case .heartbeat:
                    try await send(.heartbeat, on: tunnel)
                case .wake(let routingID, let tunnelID, let payload):
                    let clientPayload: ClientPayload
                    do throws(ClientPayloadError) {
                        clientPayload = try ClientPayload(cbor: payload)
                    } catch {
                        onEvent(.badWake(error.description))
                        continue
                    }
                    let wake = ContactWake(routingID: routingID, tunnelID: tunnelID, clientPayload: clientPayload)
                    if onWake(wake) {
                        onEvent(.woken(linkID: clientPayload.linkID))
                    } else {
                        try await send(.declined(tunnelID: tunnelID), on: tunnel)
                        onEvent(.declined(linkID: clientPayload.linkID))
                    }
                default:
                    throw .unexpectedMessage(message.description)
                }
            }
        }
    }

    // MARK: Helpers

    private func open(_ path: ListenerPath) async throws(ContactListenerError) -> any HybridTunnel {
        do throws(TunnelError) {
            return try await environment.openTunnel(url(path), timeout)
        } catch {
            throw ContactListenerError(error)
        }
    }

    /// The relay's first message: the challenge and the heartbeat interval.
    private func challenge(on tunnel: any HybridTunnel) async throws(ContactListenerError) -> (
        bytes: [UInt8], heartbeat: Duration
    ) {
        guard case .challenge(let challenge, let seconds) = try await receive(on: tunnel, timeout: timeout) else {
            throw .unexpectedMessage("not a challenge")
        }
        return (challenge, .seconds(seconds))
    }

    private func send(_ message: ListenerMessage, on tunnel: any HybridTunnel) async throws(ContactListenerError) {
        do throws(TunnelError) {
            try await tunnel.send(message.bytes)
        } catch {
            throw ContactListenerError(error)
        }
    }

    private func receive(on tunnel: any HybridTunnel, timeout: Duration) async throws(ContactListenerError)
        -> ListenerMessage
    {
        let bytes: [UInt8]?
        do throws(TunnelError) {
            bytes = try await tunnel.receive(timeout: timeout)
        } catch {
            throw ContactListenerError(error)
        }
        guard let bytes else { throw .tunnel(.connectionFailed(.closed)) }
        do throws(ListenerMessageError) {
            return try ListenerMessage(bytes: bytes)
        } catch {
            throw .unexpectedMessage(error.description)
        }
    }

    private func unitRandom() -> Double {
        let bytes = environment.randomBytes(8)
        let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(value >> 11) / Double(1 << 53)
    }
}
