import Hybrid

extension RelayRegistry {
    /// `/cable/contact/{CONTACT_ID}` of a known contact: the client's connection opens a tunnel under `tunnelID`
    /// (random, chosen by the relay) under this relay's routing ID, which the woken phone joins with
    /// `/cable/connect/{ROUTING_ID}/{TUNNEL_ID}`. The client holds the side that opened the tunnel (the one
    /// `/cable/new` opens in the QR flow, logged as `authenticator`), the phone the joining side; the limits are those
    /// of `/cable/new`.
    public mutating func openContactTunnel(
        _ tunnelID: TunnelID, subprotocols: [String], from address: String,
        connection: ConnectionID, now: ContinuousClock.Instant
    ) -> UpgradeDecision {
        guard subprotocols.contains(TunnelServerProtocol.webSocketSubprotocol) else {
            return .reject(.missingSubprotocol)
        }
        guard connectionsPerAddress[address, default: 0] < limits.maximumConnectionsPerAddress else {
            return .reject(.tooManyConnectionsFromAddress)
        }
        if let refusal = openTunnel(tunnelID, from: address, connection: connection, now: now) {
            return .reject(refusal)
        }
        return .accept(side: .authenticator, routingIDHeader: nil)
    }

    /// Whether the tunnel `connection` opened has been joined.
    public func isJoined(_ connection: ConnectionID) -> Bool {
        guard let entry = connections[connection], let tunnel = tunnels[entry.tunnel] else { return false }
        return tunnel.client != nil
    }

    /// A contact request waited long enough: unless the phone has joined its tunnel, the tunnel ends (outcome
    /// `neverJoined`) and the client's side is closed with `code`.
    public mutating func expireContactTunnel(_ connection: ConnectionID, code: UInt16, now: ContinuousClock.Instant)
        -> [Action]
    {
        guard let entry = connections[connection], entry.side == .authenticator, let tunnel = tunnels[entry.tunnel],
            tunnel.client == nil
        else { return [] }
        return finish(entry.tunnel, outcome: .neverJoined, now: now, code: code)
    }
}
