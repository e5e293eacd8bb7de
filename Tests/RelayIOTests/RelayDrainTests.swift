import Foundation
import Hybrid
import NIOCore
import Relay
import RelayIO
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// `/healthz`, and the drain before a relay stops: new tunnels are refused, open ones go on to their end.
@Suite(.timeLimit(.minutes(1)))
struct RelayDrainTests {
    static func get(_ path: String, from relay: Relay) async throws -> RawResponse {
        try await relay.request("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n").1
    }

    @Test func drainingRefusesNewTunnelsKeepsTheOpenOnesAndEndsWithTheLast() async throws {
        let relay = try await Relay.start()
        defer { Task { await relay.server.shutdown() } }
        let healthy = try await Self.get("/healthz", from: relay)
        #expect(healthy.status == 200 && healthy.body == "ok\n")

        let waitingID = Relay.randomTunnelID()
        let (waiting, routingID) = try await relay.new(waitingID)  // its computer has not come yet
        let (authenticator, client) = try await relay.pair()
        let drained = Mutex(false)
        let draining = Task {
            await relay.server.drain()
            drained.withLock { $0 = true }
        }
        try await Relay.eventually("the drain to start") { relay.server.isDraining }

        let unhealthy = try await Self.get("/healthz", from: relay)
        #expect(unhealthy.status == 503 && unhealthy.body == "draining\n")
        let (_, refused) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"))
        #expect(refused.status == 503 && refused.body == "503 draining\n")
        #expect(relay.metric("relay_rejections_total{reason=\"draining\"}") == 1)
        #expect(relay.metric("relay_draining") == 1)

        // The open tunnels go on, and the computer of the waiting one may still join.
        try await client.send(RawFrame.clientBinary([1]))
        #expect(try await authenticator.readFrame()?.payload == [1])
        let late = try await relay.connect(routingID: routingID, tunnelID: waitingID)
        try await waiting.send(RawFrame.clientBinary([2]))
        #expect(try await late.readFrame()?.payload == [2])

        await client.close()
        #expect(try await authenticator.expectClose() == 1000)
        try await Task.sleep(for: .milliseconds(50))
        #expect(!drained.withLock { $0 }, "one tunnel is still open")
        await late.close()
        #expect(try await waiting.expectClose() == 1000)
        await draining.value
        #expect(relay.metric("relay_tunnels_open") == 0)
    }

    @Test func aDrainEndsAtTheTunnelLifetime() async throws {
        // A lifetime long enough for the pairing on a loaded machine; the drain waits for what is left of it.
        let relay = try await Relay.start { $0.limits.tunnelLifetime = .seconds(3) }
        defer { Task { await relay.server.shutdown() } }
        let opened = ContinuousClock.now
        let (authenticator, _) = try await relay.pair()
        await relay.server.drain()
        #expect(ContinuousClock.now - opened >= .seconds(3))
        #expect(try await authenticator.expectClose() == 1001)
        await relay.server.drain()  // again: nothing is open, it returns at once
    }

    @Test func theServiceDrainsOnGracefulShutdownAndStopsAtOnceWhenCancelled() async throws {
        let relay = try await Relay.start()
        let (authenticator, client) = try await relay.pair()
        let service = RelayService(server: relay.server, logger: relay.log.logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [service], logger: relay.log.logger))
        let running = Task { try await group.run() }
        await group.triggerGracefulShutdown()
        try await Relay.eventually("the drain to start") { relay.server.isDraining }
        try await client.send(RawFrame.clientBinary([7]))
        #expect(try await authenticator.readFrame()?.payload == [7])
        running.cancel()  // as a second SIGTERM does
        #expect(try await authenticator.expectClose() == 1001)
        #expect(try await client.expectClose() == 1001)
        try await running.value
        await #expect(throws: (any Error).self) { _ = try await RawClient.connect(port: relay.port) }
    }
}
