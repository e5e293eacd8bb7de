import Foundation
import Relay
import RelayIO
import TestSupport
import Testing

/// Issue 10: per-address limits count networks, believe only trusted proxies, and the HTTP stage has a cap.
@Suite(.timeLimit(.minutes(1)))
struct RelayAddressLimitTests {
    static func new(_ relay: Relay, from source: String, forwardedFor: String? = nil) async throws -> Int {
        let extra = forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? ""
        let (_, response) = try await relay.request(
            WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())", extra: extra), from: source)
        return response.status
    }

    @Test func addressesOfOneSlash24CountTogether() async throws {
        let relay = try await Relay.start { $0.limits.maximumConnectionsPerAddress = 2 }
        defer { Task { await relay.server.shutdown() } }
        #expect(try await Self.new(relay, from: "127.0.3.1") == 101)
        #expect(try await Self.new(relay, from: "127.0.3.2") == 101)
        #expect(try await Self.new(relay, from: "127.0.3.200") == 429)
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyConnectionsFromAddress\"}") == 1)
        #expect(try await Self.new(relay, from: "127.0.4.1") == 101)
    }

    @Test func thePrefixLengthIsConfigurable() async throws {
        let relay = try await Relay.start {
            $0.limits.maximumConnectionsPerAddress = 1
            $0.addressRules.ipv4PrefixLength = 32
        }
        defer { Task { await relay.server.shutdown() } }
        #expect(try await Self.new(relay, from: "127.0.3.1") == 101)
        #expect(try await Self.new(relay, from: "127.0.3.2") == 101)
        #expect(try await Self.new(relay, from: "127.0.3.2") == 429)
    }

    @Test func forwardedForCountsOnlyBehindATrustedProxy() async throws {
        let relay = try await Relay.start {
            $0.limits.maximumConnectionsPerAddress = 1
            $0.addressRules.trustedProxies = [try! IPNetwork("127.0.5.1")]
        }
        defer { Task { await relay.server.shutdown() } }
        // Behind the proxy every client counts as itself (its /24), not as the proxy.
        #expect(try await Self.new(relay, from: "127.0.5.1", forwardedFor: "198.51.100.7") == 101)
        #expect(try await Self.new(relay, from: "127.0.5.1", forwardedFor: "203.0.113.5") == 101)
        #expect(try await Self.new(relay, from: "127.0.5.1", forwardedFor: "198.51.100.8") == 429)
        // A proxy may hold more than the per-address limit of connections in the HTTP stage.
        let waiting = try await (0..<3).asyncMap { _ in try await RawClient.connect(port: relay.port, from: "127.0.5.1")
        }
        try await Relay.eventually("the proxy's connections") { relay.metric("relay_connections_open") == 5 }
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyPendingConnections\"}") == 0)
        for client in waiting { await client.close() }
        // Anyone else's header is ignored: these two count as 127.0.6.0/24.
        #expect(try await Self.new(relay, from: "127.0.6.1", forwardedFor: "192.0.2.1") == 101)
        #expect(try await Self.new(relay, from: "127.0.6.2", forwardedFor: "192.0.2.2") == 429)
    }

    @Test func connectionsInTheHTTPStageHaveAGlobalCap() async throws {
        let relay = try await Relay.start { $0.limits.maximumPendingConnections = 2 }
        defer { Task { await relay.server.shutdown() } }
        let first = try await RawClient.connect(port: relay.port, from: "127.0.7.1")
        let second = try await RawClient.connect(port: relay.port, from: "127.0.8.1")
        try await Relay.eventually("two connections") { relay.metric("relay_connections_open") == 2 }
        let third = try await RawClient.connect(port: relay.port, from: "127.0.9.1")
        try await third.expectEOF()
        #expect(relay.metric("relay_rejections_total{reason=\"tooManyPendingConnectionsOverall\"}") == 1)
        // An upgraded connection leaves the HTTP stage and frees its place.
        try await first.send(WebSocketUpgrade.request(path: "/cable/new/\(Relay.randomTunnelID())"))
        #expect(try await first.readResponse().status == 101)
        try await Relay.eventually("the upgrade to free a place") {
            relay.server.metricsText().contains("relay_tunnels_open 1")
        }
        #expect(try await Self.new(relay, from: "127.0.9.1") == 101)
        await second.close()
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
