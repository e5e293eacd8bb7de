import Basics
import Hybrid
import Relay
import Testing

/// Routing IDs of cluster instances, and contact IDs whose first 4 base64url characters are the routing ID.
struct RelayRoutingTests {
    @Test(arguments: [(0, "000000"), (1, "000001"), (3, "000003"), (300, "00012C"), (0xFF_FFFF, "FFFFFF")])
    func instanceNumbersAreBigEndianRoutingIDs(instance: Int, hex: String) throws {
        #expect(try RelayRouting.routingID(instance: instance).hex == hex)
    }

    @Test(arguments: [-1, 0x100_0000])
    func instanceNumbersMustFitThreeBytes(instance: Int) {
        #expect(throws: RelayRoutingError.instanceOutOfRange(instance)) {
            try RelayRouting.routingID(instance: instance)
        }
    }

    @Test func aContactIDIsTheRoutingIDThen29RandomBytes() throws {
        let routingID = try RoutingID(hex: "0A0B0C")
        let random = [UInt8](repeating: 0xEE, count: 29)
        let contactID = try RelayRouting.contactID(routingID: routingID, random: random)
        #expect(contactID.count == 32 && RelayRouting.contactIDByteCount == 32)
        #expect(contactID == [0x0A, 0x0B, 0x0C] + random)
        #expect(RelayRouting.routingID(ofContactID: contactID) == routingID)
        #expect(RelayRouting.routingID(ofContactID: Array(contactID.dropLast())) == nil)
        #expect(throws: RelayRoutingError.wrongRandomLength(28)) {
            try RelayRouting.contactID(routingID: routingID, random: Array(random.dropLast()))
        }
    }

    /// What a load balancer does: the first 4 characters of the path segment, and nothing else, name the instance.
    @Test func theFirstFourBase64URLCharactersAreTheRoutingID() throws {
        var generator = SystemRandomNumberGenerator()
        for instance in [0, 1, 2, 62, 63, 64, 255, 256, 4095, 65_535, 0xAB_CDEF, 0xFF_FFFF] {
            let routingID = try RelayRouting.routingID(instance: instance)
            let prefix = RelayRouting.contactIDPrefix(routingID)
            #expect(prefix.count == RelayRouting.contactIDPrefixLength)
            for _ in 0..<8 {
                let random = (0..<29).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let segment = try RelayRouting.contactID(routingID: routingID, random: random).base64URLEncodedString
                #expect(segment.count == 43)
                #expect(segment.hasPrefix(prefix), "instance \(instance)")
                #expect(RelayRouting.routingID(ofContactIDSegment: segment) == routingID)
                #expect(try TunnelPath(path: "/cable/contact/\(segment)") == .contact(routingID.bytes + random))
            }
        }
        #expect(RelayRouting.contactIDPrefix(try RoutingID(hex: "000001")) == "AAAB")
        #expect(RelayRouting.routingID(ofContactIDSegment: "AA") == nil)
        #expect(RelayRouting.routingID(ofContactIDSegment: "AA+B") == nil)
    }
}
