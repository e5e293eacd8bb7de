import Foundation
import Hybrid
import Relay
import Testing

struct AddressRulesTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("2001:db8::1", "2001:db8:0:0:0:0:0:1"), ("::1", "0:0:0:0:0:0:0:1"), ("::", "0:0:0:0:0:0:0:0"),
        ("[2001:DB8:0:0:1::]", "2001:db8:0:0:1:0:0:0"), ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1"),
        ("::ffff:192.0.2.9", "192.0.2.9"), ("64:ff9b::192.0.2.1", "64:ff9b:0:0:0:0:c000:201"),
        ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
    ])
    func parsesAddresses(text: String, canonical: String) throws {
        #expect(try #require(IPAddress(text)).description == canonical)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.-4", "01234.1.1.1", "localhost", "1:2:3:4:5:6:7", "1::2::3",
        "1:2:3:4:5:6:7:8:9", "12345::", ":::", "g::1", "1.2.3.4:80", "::1.2.3", " 1.2.3.4",
    ])
    func refusesWhatIsNotAnAddress(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func networksContainTheirAddressesOnly() throws {
        let v4 = try IPNetwork("10.1.2.3/8")
        #expect(v4.description == "10.0.0.0/8")
        #expect(v4.contains(try #require(IPAddress("10.255.0.1"))))
        #expect(!v4.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!v4.contains(try #require(IPAddress("::ffff:11.0.0.1"))))
        #expect(v4.contains(try #require(IPAddress("::ffff:10.0.0.1"))))
        let v6 = try IPNetwork("2001:db8:aaaa:bbbb::/64")
        #expect(v6.contains(try #require(IPAddress("2001:db8:aaaa:bbbb:1:2:3:4"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db8:aaaa:bbbc::1"))))
        #expect(try IPNetwork("192.0.2.7").description == "192.0.2.7/32")
        #expect(try IPNetwork("10.0.0.0/21").description == "10.0.0.0/21")
        #expect(try IPNetwork("10.0.7.255/21").description == "10.0.0.0/21")
        #expect(throws: AddressError.prefixLengthOutOfRange(33)) { try IPNetwork("10.0.0.0/33") }
        #expect(throws: AddressError.notAnAddress("example.com/8")) { try IPNetwork("example.com/8") }
        #expect(throws: AddressError.notAnAddress("10.0.0.0/x")) { try IPNetwork("10.0.0.0/x") }
    }

    @Test func limitKeysAreNetworksAtTheConfiguredPrefixLengths() {
        var rules = AddressRules()
        #expect(rules.limitKey(for: "192.0.2.77") == "192.0.2.0/24")
        #expect(rules.limitKey(for: "::ffff:192.0.2.78") == "192.0.2.0/24")
        #expect(rules.limitKey(for: "2001:db8:1:2:aaaa::1") == "2001:db8:1:2:0:0:0:0/64")
        #expect(rules.limitKey(for: "unknown") == "unknown")
        rules.ipv4PrefixLength = 32
        rules.ipv6PrefixLength = 48
        #expect(rules.limitKey(for: "192.0.2.77") == "192.0.2.77/32")
        #expect(rules.limitKey(for: "2001:db8:1:2:aaaa::1") == "2001:db8:1:0:0:0:0:0/48")
    }

    @Test func forwardedForIsBelievedOnlyFromATrustedProxy() throws {
        var rules = AddressRules()
        rules.trustedProxies = [try IPNetwork("10.0.0.0/8"), try IPNetwork("2001:db8::/32")]
        // Not a proxy: its header is the client's own word.
        #expect(rules.clientAddress(peer: "198.51.100.1", forwardedFor: ["203.0.113.9"]) == "198.51.100.1")
        // A proxy: the right-most address that is not a proxy; what is left of it could be forged.
        #expect(rules.clientAddress(peer: "10.0.0.5", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        #expect(
            rules.clientAddress(peer: "10.0.0.5", forwardedFor: ["1.1.1.1, 203.0.113.9", "10.9.9.9"]) == "203.0.113.9")
        #expect(
            rules.clientAddress(peer: "2001:db8::7", forwardedFor: ["2001:db8::8, 2a00::1"]) == "2a00:0:0:0:0:0:0:1")
        // Only proxies, nothing usable, or no header: the peer itself.
        #expect(rules.clientAddress(peer: "10.0.0.5", forwardedFor: ["10.1.1.1"]) == "10.0.0.5")
        #expect(rules.clientAddress(peer: "10.0.0.5", forwardedFor: ["1.1.1.1, garbage"]) == "10.0.0.5")
        #expect(rules.clientAddress(peer: "10.0.0.5", forwardedFor: []) == "10.0.0.5")
        #expect(rules.isTrustedProxy("10.200.0.1") && !rules.isTrustedProxy("11.0.0.1") && !rules.isTrustedProxy("x"))
    }
}

struct RelayRegistryAddressTests {
    static let now = ContinuousClock.now

    static func new(_ registry: inout Registry, from address: String, id: UInt64) -> RelayUpgradeDecision {
        let tunnelID = String(repeating: String(format: "%02X", UInt8(id % 256)), count: 15) + "0F"
        return registry.upgrade(
            path: "/cable/new/\(tunnelID)", subprotocols: ["fido.cable"], from: address, connection: ConnectionID(id),
            now: now)
    }

    /// The attack of issue 10: a few networks with many tunnels each take everything, and every phone then gets
    /// 429. The reserve keeps the last quarter for networks that hold no tunnel.
    @Test func theLastTunnelsAreKeptForAddressesThatHoldNone() {
        var limits = RelayLimits()
        limits.maximumTunnels = 8
        limits.maximumConnectionsPerAddress = 4
        var registry = Registry(limits: limits)
        var id: UInt64 = 0
        for attacker in ["198.51.100.0/24", "203.0.113.0/24"] {
            for _ in 0..<3 {
                id += 1
                #expect(
                    Self.new(&registry, from: attacker, id: id)
                        == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
            }
        }
        // 6 of 8 open: the reserve (25 % of 8 = 2) is all that is left.
        id += 1
        #expect(Self.new(&registry, from: "198.51.100.0/24", id: id) == .reject(.tooManyTunnelsFromAddress))
        for phone in ["192.0.2.0/24", "192.0.3.0/24"] {
            id += 1
            #expect(
                Self.new(&registry, from: phone, id: id) == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
        }
        id += 1
        #expect(Self.new(&registry, from: "192.0.4.0/24", id: id) == .reject(.tooManyTunnels))
        // Closing a tunnel gives its place back, and the address's count drops.
        _ = registry.closed(ConnectionID(1), now: Self.now)
        id += 1
        #expect(Self.new(&registry, from: "198.51.100.0/24", id: id) == .reject(.tooManyTunnelsFromAddress))
        id += 1
        #expect(
            Self.new(&registry, from: "192.0.4.0/24", id: id)
                == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
    }

    @Test func noReserveWhenItIsZero() {
        var limits = RelayLimits()
        limits.maximumTunnels = 4
        limits.reservedTunnelPercent = 0
        var registry = Registry(limits: limits)
        for id in 1...4 as ClosedRange<UInt64> {
            #expect(Self.new(&registry, from: "a", id: id) == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
        }
        #expect(Self.new(&registry, from: "b", id: 5) == .reject(.tooManyTunnels))
    }

    @Test func theReservedShareIsAPercentOfTheTunnelLimit() {
        var limits = RelayLimits()
        limits.maximumTunnels = 10
        limits.reservedTunnelPercent = 50
        limits.maximumConnectionsPerAddress = 100
        var registry = Registry(limits: limits)
        for id in 1...5 as ClosedRange<UInt64> {
            #expect(Self.new(&registry, from: "a", id: id) == .accept(side: .authenticator, routingIDHeader: "0A0B0C"))
        }
        #expect(Self.new(&registry, from: "a", id: 6) == .reject(.tooManyTunnelsFromAddress))
    }
}
