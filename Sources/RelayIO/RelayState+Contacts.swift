import CoreMetrics
import Hybrid
import NIOCore
import NIOHTTP1
import Relay
import Synchronization

/// The wake channel's requests and the tunnels of contact requests, on the relay's state (Docs/Relay.md,
/// "/cable/contact and listeners").
extension RelayState {
    /// The decision for `/cable/listen[/{ROUTING_ID}]` and `/cable/contact/…` upgrades; nil for every other path
    /// (the registry decides those) or when the wake channel is off.
    func contactUpgrade(
        _ connection: RelayConnection, head: HTTPRequestHead, subprotocols: [String], forwardedFor: [String]
    ) -> RelayUpgradeDecision? {
        guard contacts.isEnabled else { return nil }
        let client = addressRules.clientAddress(peer: connection.address, forwardedFor: forwardedFor)
        let key = addressRules.limitKey(for: client)
        let listenerPath: ListenerPath?
        do throws(TunnelPathError) {
            listenerPath = try ListenerPath(path: head.uri)
        } catch {
            guard error == .unknownPath else { return .reject(.badHex) }
            listenerPath = nil
        }
        if let listenerPath {
            guard subprotocols.contains(TunnelServerProtocol.webSocketSubprotocol) else {
                return .reject(.missingSubprotocol)
            }
            // Another instance's contact: a misrouted listener fails at once, without a 4410 that would make the
            // phone drop a contact its own instance still keeps.
            guard contacts.accepts(listenerPath) else { return .reject(.unknownRoutingID) }
            guard
                contacts.acceptListener(
                    connection, address: key, maximumConnections: limits.maximumConnectionsPerAddress)
            else { return .reject(.tooManyConnectionsFromAddress) }
            locked.withLock { $0.endPending(connection.id) }
            return .accept(side: .client, routingIDHeader: nil)
        }
        guard case .contact(let contactID)? = try? TunnelPath(path: head.uri) else { return nil }
        let values = head.headers[ClientPayload.headerName]
        guard values.count == 1, let payload = try? ClientPayload(headerValue: values[0]) else {
            return .reject(.badClientPayload)
        }
        guard contacts.isKnown(contactID) else {
            metrics.contactRequestsGone.increment()
            return .reject(.contactGone)
        }
        metrics.contactRequestsKnown.increment()
        let tunnelID: TunnelID
        do throws(TunnelIdentifierError) {
            tunnelID = try TunnelID(bytes: (0..<TunnelID.byteCount).map { _ in UInt8.random(in: 0...255) })
        } catch {
            return .reject(.badHex)
        }
        let now = self.now()
        let decision = locked.withLock { state in
            let decision = state.registry.openContactTunnel(
                tunnelID, subprotocols: subprotocols, from: key, connection: connection.id,
                now: now)
            if case .accept = decision {
                state.endPending(connection.id)
                metrics.tunnelsOpened.increment()
            }
            return decision
        }
        if case .accept = decision {
            contacts.contactTunnelOpened(
                connection, contactID: contactID, tunnelID: tunnelID, clientPayload: payload.cbor)
        }
        return decision
    }

    /// A contact request waited long enough: unless its phone joined, its tunnel ends and the client is closed with
    /// `code`.
    func expireContactTunnel(_ connection: RelayConnection, code: UInt16) {
        let now = self.now()
        perform(
            locked.withLock { state in
                state.resolve(state.registry.expireContactTunnel(connection.id, code: code, now: now), metrics: metrics)
            })
    }
}
