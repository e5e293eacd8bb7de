import Hybrid
import Relay
import Testing

/// A tunnel's life in the registry: who is closed with what, when, and what its record says.
struct RelayRegistryLifecycleTests {
    static let tunnelID = "00112233445566778899AABBCCDDEEFF"
    static let start = ContinuousClock.now
    static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    let authenticator = ConnectionID(1)
    let client = ConnectionID(2)

    func new(_ registry: inout Registry, from address: String = "10.0.0.1", at second: Int = 0) -> RelayUpgradeDecision
    {
        registry.upgrade(
            path: "/cable/new/\(Self.tunnelID)", subprotocols: ["fido.cable"], from: address, connection: authenticator,
            now: Self.at(second))
    }

    func connect(_ registry: inout Registry, from address: String = "10.0.0.2", at second: Int = 1)
        -> RelayUpgradeDecision
    {
        registry.upgrade(
            path: "/cable/connect/0A0B0C/\(Self.tunnelID)", subprotocols: ["fido.cable"], from: address,
            connection: client, now: Self.at(second))
    }

    /// The record of the `finished` action that must end `actions`.
    func record(_ actions: [Registry.Action]) throws -> TunnelRecord {
        guard case .finished(let record) = actions.last else { throw RecordMissing() }
        return record
    }

    struct RecordMissing: Error {}

    @Test func anAuthenticatorLeavingBeforeTheJoinEndsTheTunnelAsNeverJoined() throws {
        var registry = Registry()
        _ = new(&registry)
        _ = registry.message([1, 2], from: authenticator, now: Self.at(3))
        let actions = registry.closed(authenticator, now: Self.at(4))
        #expect(actions.count == 1)  // nobody left to close
        let record = try record(actions)
        #expect(record.outcome == .neverJoined && record.paired == nil)
        #expect(record.opened == Self.at(0) && record.closed == Self.at(4))
        #expect(record.bytesFromAuthenticator == 2 && record.messagesFromAuthenticator == 1)
        #expect(record.routingID.hex == "0A0B0C" && record.tunnelID.hex == Self.tunnelID)
        #expect(registry.openTunnels == 0)
        #expect(connect(&registry) == .reject(.unknownTunnel))
        // The tunnel ID is free again.
        #expect(new(&registry, at: 5) == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
    }

    @Test(arguments: [true, false])
    func eitherSideLeavingClosesTheOtherWith1000(authenticatorLeaves: Bool) throws {
        var registry = Registry()
        _ = new(&registry)
        _ = connect(&registry)
        let (leaving, staying) = authenticatorLeaves ? (authenticator, client) : (client, authenticator)
        let actions = registry.closed(leaving, now: Self.at(5))
        #expect(actions.first == .close(staying, code: 1000))
        #expect(actions.count == 2)
        let record = try record(actions)
        #expect(record.outcome == .completed && record.paired == Self.at(1) && record.closed == Self.at(5))
        #expect(registry.openTunnels == 0 && registry.pairedTunnels == 0)
        // The other side's close, when it comes, finds nothing left.
        #expect(registry.closed(staying, now: Self.at(6)).isEmpty)
    }

    @Test func onlyTheClientSideReceivesTheBufferWhenItJoins() {
        var registry = Registry()
        _ = new(&registry)
        _ = registry.message([1], from: authenticator, now: Self.at(0))
        #expect(registry.joined(authenticator).isEmpty)
        #expect(registry.joined(ConnectionID(99)).isEmpty)
        _ = connect(&registry)
        #expect(registry.joined(client) == [.forward([1], to: client)])
        #expect(registry.joined(client).isEmpty)  // delivered once
    }

    @Test func connectionsWithoutATunnelAreIgnored() {
        var registry = Registry()
        let stranger = ConnectionID(99)
        #expect(registry.message([1], from: stranger, now: Self.at(0)).isEmpty)
        #expect(registry.closed(stranger, now: Self.at(0)).isEmpty)
        #expect(registry.tick(now: Self.at(1000)).isEmpty)
    }

    @Test func eachSideHasItsOwnMessageCount() throws {
        var limits = RelayLimits()
        limits.maximumMessagesPerSide = 2
        var registry = Registry(limits: limits)
        _ = new(&registry)
        #expect(registry.message([1], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(registry.message([2], from: authenticator, now: Self.at(0)).isEmpty)
        _ = connect(&registry)
        _ = registry.joined(client)
        #expect(registry.message([3], from: client, now: Self.at(2)) == [.forward([3], to: authenticator)])
        #expect(registry.message([4], from: client, now: Self.at(2)) == [.forward([4], to: authenticator)])
        let actions = registry.message([5], from: client, now: Self.at(2))
        #expect(actions.prefix(2) == [.close(authenticator, code: 1008), .close(client, code: 1008)])
        let record = try record(actions)
        #expect(record.outcome == .tooManyMessages)
        #expect(record.messagesFromClient == 2 && record.messagesFromAuthenticator == 2)
    }

    @Test func theBufferHoldsExactlyItsLimitAndOnlyBeforeTheJoin() throws {
        var limits = RelayLimits()
        limits.maximumBufferedBytes = 10
        var registry = Registry(limits: limits)
        _ = new(&registry)
        #expect(registry.message([1, 1, 1, 1], from: authenticator, now: Self.at(0)).isEmpty)
        #expect(registry.message(Array(repeating: 2, count: 6), from: authenticator, now: Self.at(0)).isEmpty)
        _ = connect(&registry)
        #expect(registry.joined(client).count == 2)
        // Once the client is there, nothing is buffered: the limit no longer applies.
        let large = [UInt8](repeating: 3, count: 11)
        #expect(registry.message(large, from: authenticator, now: Self.at(2)) == [.forward(large, to: client)])

        var overflowing = Registry(limits: limits)
        _ = new(&overflowing)
        _ = overflowing.message(Array(repeating: 1, count: 10), from: authenticator, now: Self.at(0))
        let actions = overflowing.message([1], from: authenticator, now: Self.at(0))
        #expect(actions.first == .close(authenticator, code: 1008))
        #expect(try record(actions).outcome == .bufferFull)
    }

    @Test func activityFromEitherSideKeepsATunnelAlive() throws {
        var limits = RelayLimits()
        limits.idleTimeout = .seconds(30)
        var registry = Registry(limits: limits)
        _ = new(&registry)
        _ = connect(&registry)
        _ = registry.message([1], from: authenticator, now: Self.at(20))
        #expect(registry.tick(now: Self.at(49)).isEmpty)
        _ = registry.message([1], from: client, now: Self.at(45))
        #expect(registry.tick(now: Self.at(74)).isEmpty)
        let actions = registry.tick(now: Self.at(75))
        #expect(actions.prefix(2) == [.close(authenticator, code: 1001), .close(client, code: 1001)])
        #expect(try record(actions).outcome == .idle)
    }

    @Test func theLifetimeCountsFromTheRegistrationAndWinsOverIdleness() throws {
        var limits = RelayLimits()
        limits.tunnelLifetime = .seconds(60)
        limits.idleTimeout = .seconds(60)
        var registry = Registry(limits: limits)
        _ = new(&registry)
        _ = connect(&registry, at: 30)
        #expect(registry.tick(now: Self.at(59)).isEmpty)
        let actions = registry.tick(now: Self.at(60))
        #expect(try record(actions).outcome == .lifetimeExpired)
        #expect(try record(actions).paired == Self.at(30))
    }

    @Test func bothSidesCountAgainstTheirAddressUntilTheTunnelEnds() {
        var limits = RelayLimits()
        limits.maximumConnectionsPerAddress = 1
        var registry = Registry(limits: limits)
        _ = new(&registry, from: "net-a")
        #expect(connect(&registry, from: "net-a") == .reject(.tooManyConnectionsFromAddress))
        #expect(connect(&registry, from: "net-b") == .accept(side: .client, routingIDHeader: nil))
        _ = registry.closed(client, now: Self.at(2))
        // Both sides' places are free once the tunnel has ended.
        #expect(new(&registry, from: "net-a", at: 3) == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
        #expect(connect(&registry, from: "net-b", at: 4) == .accept(side: .client, routingIDHeader: nil))
    }

    @Test func aFailureBeforeTheJoinClosesTheAuthenticator() throws {
        var registry = Registry()
        _ = new(&registry)
        let actions = registry.failed(authenticator, outcome: .textFrame, code: 1003, now: Self.at(1))
        #expect(actions.first == .close(authenticator, code: 1003))
        #expect(try record(actions).outcome == .textFrame)
    }

    @Test func messagesArePassedOnAsTheyCame() {
        // Any collection of bytes: the registry counts it and never copies or reads it.
        var registry = RelayRegistry<ArraySlice<UInt8>>()
        _ = registry.upgrade(
            path: "/cable/new/\(Self.tunnelID)", subprotocols: ["fido.cable"], from: "a", connection: authenticator,
            now: Self.at(0))
        _ = registry.upgrade(
            path: "/cable/connect/0A0B0C/\(Self.tunnelID)", subprotocols: ["fido.cable"], from: "b",
            connection: client, now: Self.at(0))
        let slice = ([0, 1, 2, 3, 4, 5] as [UInt8])[2..<5]
        #expect(registry.message(slice, from: client, now: Self.at(1)) == [.forward(slice, to: authenticator)])
    }
}
