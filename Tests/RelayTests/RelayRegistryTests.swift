import Hybrid
import Relay
import Foundation
import Testing

/// The registry with messages as byte arrays.
typealias Registry = RelayRegistry<[UInt8]>

extension RelayRegistry {
    /// ``relay(_:from:now:)``'s decision as the list of actions the tests compare.
    mutating func message(_ bytes: Message, from connection: ConnectionID, now: ContinuousClock.Instant) -> [Action] {
        switch relay(bytes, from: connection, now: now) {
        case .forward(let message, let peer): [.forward(message, to: peer)]
        case .kept: []
        case .actions(let actions): actions
        }
    }

    /// The routing ID of the tests' relays.
    static var testRoutingID: RoutingID { try! RoutingID(hex: "0A0B0C") }

    /// A relay whose routing ID is 0A0B0C.
    init(limits: RelayLimits = RelayLimits()) { self.init(limits: limits, routingID: Self.testRoutingID) }
}

struct RelayRegistryTests {
    static let tunnelID = "00112233445566778899AABBCCDDEEFF"
    static let start = ContinuousClock.now
    static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    let authenticator = ConnectionID(1)
    let client = ConnectionID(2)

    /// A registry with one tunnel registered by `authenticator` (routing ID 0A0B0C).
    func registered(limits: RelayLimits = RelayLimits()) -> Registry {
        var registry = Registry(limits: limits)
        let decision = registry.upgrade(
            path: "/cable/new/\(Self.tunnelID)", subprotocols: ["fido.cable"], from: "10.0.0.1",
            connection: authenticator, now: Self.at(0))
        #expect(decision == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
        return registry
    }

    mutating func join(_ registry: inout Registry, path: String = "/cable/connect/0a0b0c/\(tunnelID)")
        -> RelayUpgradeDecision
    {
        registry.upgrade(
            path: path, subprotocols: ["other", "fido.cable"], from: "10.0.0.2", connection: client, now: Self.at(1))
    }

    @Test mutating func relaysBothWaysInOrderAndBuffersBeforeTheClientJoins() {
        var registry = registered()
        #expect(registry.message([1], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(registry.message([2, 2], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(join(&registry) == .accept(side: .client, routingIDHeader: nil))
        #expect(registry.joined(client) == [.forward([1], to: client), .forward([2, 2], to: client)])
        #expect(
            registry.message([3], from: client, now: Self.at(2)) == [.forward([3], to: authenticator)])
        #expect(
            registry.message([4], from: authenticator, now: Self.at(2)) == [.forward([4], to: client)])
        #expect(registry.openTunnels == 1 && registry.pairedTunnels == 1)

        let actions = registry.closed(client, now: Self.at(3))
        #expect(actions.first == .close(authenticator, code: 1000))
        guard case .finished(let record) = actions.last else {
            Issue.record("no record")
            return
        }
        #expect(record.outcome == .completed)
        #expect(record.bytesFromAuthenticator == 4 && record.messagesFromAuthenticator == 3)
        #expect(record.bytesFromClient == 1 && record.messagesFromClient == 1)
        #expect(registry.openTunnels == 0)
        #expect(registry.message([5], from: authenticator, now: Self.at(4)).isEmpty)
    }

    @Test mutating func refusals() {
        var registry = registered()
        let tries: [(String, [String], RelayRejection)] = [
            ("/cable/other", ["fido.cable"], .unknownPath),
            ("/cable/new/XYZ", ["fido.cable"], .badHex),
            ("/cable/new/\(Self.tunnelID)", ["fido.cable"], .duplicateTunnel),
            ("/cable/connect/0A0B0D/\(Self.tunnelID)", ["fido.cable"], .unknownRoutingID),
            ("/cable/connect/0A0B0D/FFEEDDCCBBAA99887766554433221100", ["fido.cable"], .unknownRoutingID),
            ("/cable/connect/0A0B0C/FFEEDDCCBBAA99887766554433221100", ["fido.cable"], .unknownTunnel),
            ("/cable/connect/0A0B0C/\(Self.tunnelID)", [], .missingSubprotocol),
            ("/cable/connect/0A0B0C/\(Self.tunnelID)", ["chat"], .missingSubprotocol),
        ]
        for (path, subprotocols, rejection) in tries {
            let decision = registry.upgrade(
                path: path, subprotocols: subprotocols, from: "10.0.0.3", connection: ConnectionID(9), now: Self.at(1))
            #expect(decision == .reject(rejection), "\(path)")
        }
        #expect(join(&registry) == .accept(side: .client, routingIDHeader: nil))
        #expect(join(&registry) == .reject(.tunnelAlreadyJoined))
        #expect(RelayRejection.duplicateTunnel.status == 409 && RelayRejection.unknownTunnel.status == 404)
        #expect(RelayRejection.badHex.status == 400)
    }

    @Test mutating func everyTunnelGetsTheRelaysRoutingIDAndConnectMustNameIt() {
        var registry = Registry(limits: RelayLimits(), routingID: try! RoutingID(hex: "00012C"))
        for index in 1...3 {
            let tunnelID = String(repeating: String(format: "%02X", index), count: 16)
            #expect(
                registry.upgrade(
                    path: "/cable/new/\(tunnelID)", subprotocols: ["fido.cable"], from: "10.0.0.\(index)",
                    connection: ConnectionID(UInt64(index)), now: Self.at(0))
                    == .accept(side: .authenticator, routingIDHeader: "00012C"))
        }
        let tunnelID = String(repeating: "01", count: 16)
        for other in ["00012D", "01012C", "000000"] {
            #expect(
                registry.upgrade(
                    path: "/cable/connect/\(other)/\(tunnelID)", subprotocols: ["fido.cable"], from: "10.0.1.1",
                    connection: ConnectionID(9), now: Self.at(1)) == .reject(.unknownRoutingID))
        }
        #expect(
            registry.upgrade(
                path: "/cable/connect/00012c/\(tunnelID)", subprotocols: ["fido.cable"], from: "10.0.1.1",
                connection: ConnectionID(9), now: Self.at(1)) == .accept(side: .client, routingIDHeader: nil))
        #expect(RelayRejection.unknownRoutingID.status == 404)
    }

    @Test mutating func drainingRefusesNewTunnelsAndKeepsTheOpenOnes() {
        var registry = registered()
        registry.isDraining = true
        #expect(
            registry.upgrade(
                path: "/cable/new/FFEEDDCCBBAA99887766554433221100", subprotocols: ["fido.cable"], from: "10.0.0.9",
                connection: ConnectionID(9), now: Self.at(1)) == .reject(.draining))
        #expect(RelayRejection.draining.status == 503)
        #expect(registry.message([1], from: authenticator, now: Self.at(1)).isEmpty)
        #expect(join(&registry) == .accept(side: .client, routingIDHeader: nil))
        #expect(registry.joined(client) == [.forward([1], to: client)])
        #expect(registry.message([2], from: client, now: Self.at(2)) == [.forward([2], to: authenticator)])
        _ = registry.closed(client, now: Self.at(3))
        #expect(registry.openTunnels == 0)
    }

    @Test mutating func aMessageOverTheLimitClosesTheTunnel() {
        var limits = RelayLimits()
        limits.maximumMessageBytes = 16
        var registry = registered(limits: limits)
        _ = join(&registry)
        #expect(registry.message(Array(repeating: 0, count: 16), from: client, now: Self.at(2)).count == 1)
        let actions = registry.message(Array(repeating: 0, count: 17), from: client, now: Self.at(2))
        #expect(actions.prefix(2) == [.close(authenticator, code: 1009), .close(client, code: 1009)])
        guard case .finished(let record) = actions.last else {
            Issue.record("no record")
            return
        }
        #expect(record.outcome == .messageTooLarge)
        #expect(registry.openTunnels == 0)
    }

    @Test mutating func eachSideKnowsItsPeerOnceBothAreThere() {
        var registry = registered()
        #expect(registry.peer(of: authenticator) == nil)
        _ = join(&registry)
        #expect(registry.peer(of: authenticator) == client)
        #expect(registry.peer(of: client) == authenticator)
        #expect(registry.peer(of: ConnectionID(99)) == nil)
        _ = registry.closed(client, now: Self.at(2))
        #expect(registry.peer(of: authenticator) == nil)
    }

    @Test func messageCountAndBufferLimits() {
        var limits = RelayLimits()
        limits.maximumMessagesPerSide = 2
        var registry = registered(limits: limits)
        #expect(registry.message([1], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(registry.message([2], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(
            registry.message([3], from: authenticator, now: Self.at(0)).first
                == .close(authenticator, code: 1008))

        limits = RelayLimits()
        limits.maximumBufferedBytes = 10
        registry = registered(limits: limits)
        #expect(
            registry.message(Array(repeating: 1, count: 10), from: authenticator, now: Self.at(0))
                .isEmpty)
        let overflow = registry.message([1], from: authenticator, now: Self.at(0))
        guard case .finished(let record) = overflow.last else {
            Issue.record("no record")
            return
        }
        #expect(record.outcome == .bufferFull)
    }

    @Test mutating func lifetimeAndIdleTimeouts() {
        var limits = RelayLimits()
        limits.idleTimeout = .seconds(30)
        var registry = registered(limits: limits)
        _ = join(&registry)
        #expect(registry.tick(now: Self.at(29)).isEmpty)
        let idle = registry.tick(now: Self.at(31))
        if case .finished(let record) = idle.last { #expect(record.outcome == .idle) } else { Issue.record("not idle") }

        registry = registered()
        for second in stride(from: 10, to: 120, by: 10) {
            _ = registry.message([1], from: authenticator, now: Self.at(second))
            #expect(registry.tick(now: Self.at(second)).isEmpty || second >= 120)
        }
        let expired = registry.tick(now: Self.at(120))
        if case .finished(let record) = expired.last {
            #expect(record.outcome == .lifetimeExpired)
        } else {
            Issue.record("not expired")
        }
    }

    @Test func connectionAndTunnelCaps() {
        var limits = RelayLimits()
        limits.maximumConnectionsPerAddress = 2
        limits.maximumTunnels = 3
        var registry = Registry(limits: limits, routingID: try! RoutingID(hex: "420203"))
        func open(_ index: UInt8, from address: String) -> RelayUpgradeDecision {
            registry.upgrade(
                path: "/cable/new/" + String(repeating: String(format: "%02X", index), count: 16),
                subprotocols: ["fido.cable"], from: address, connection: ConnectionID(UInt64(index)), now: Self.at(0))
        }
        #expect(open(1, from: "a") == .accept(side: .authenticator, routingIDHeader: "420203"))
        #expect(open(2, from: "a") == .accept(side: .authenticator, routingIDHeader: "420203"))
        #expect(open(3, from: "a") == .reject(.tooManyConnectionsFromAddress))
        #expect(open(4, from: "b") == .accept(side: .authenticator, routingIDHeader: "420203"))
        #expect(open(5, from: "c") == .reject(.tooManyTunnels))
        _ = registry.closed(ConnectionID(1), now: Self.at(1))
        #expect(open(6, from: "a") == .accept(side: .authenticator, routingIDHeader: "420203"))
    }

    @Test mutating func failedConnectionsCloseBothSidesWithTheirCode() {
        var registry = registered()
        #expect(registry.pairedTunnels == 0)
        _ = join(&registry)
        #expect(registry.pairedTunnels == 1)
        let actions = registry.failed(client, outcome: .protocolError, code: 1002, now: Self.at(2))
        #expect(actions.prefix(2) == [.close(authenticator, code: 1002), .close(client, code: 1002)])
        guard case .finished(let record) = actions.last else {
            Issue.record("no record")
            return
        }
        #expect(record.outcome == .protocolError)
        #expect(registry.openTunnels == 0 && registry.pairedTunnels == 0)
        // A connection with no tunnel left is still closed.
        #expect(
            registry.failed(client, outcome: .messageTooLarge, code: 1009, now: Self.at(3))
                == [.close(client, code: 1009)])
    }
}
