import Basics

/// A static random device address (Bluetooth Core 5.4, Vol 6 Part B §1.3.2.1): 48 bits whose two most significant
/// bits are 1 and whose other 46 bits are neither all 0 nor all 1. The advertiser makes a fresh one for each
/// session and advertises from it, so observers cannot link the advert to the controller's public address or to
/// earlier sessions. Pure: randomness comes in as a parameter.
package struct StaticRandomAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address as a 48-bit number; the most significant bits are the ones the specification names first.
    package let value: UInt64

    /// The two most significant bits, `0b11` for a static address.
    package static let typeMask: UInt64 = 0b11 << 46
    /// The 46 bits that must be neither all 0 nor all 1.
    package static let randomMask: UInt64 = 1 << 46 - 1

    /// `value` as an address, or `nil` unless it has 48 bits, the static type bits, and a valid random part.
    package init?(value: UInt64) {
        guard value >> 48 == 0, value & Self.typeMask == Self.typeMask else { return nil }
        let random = value & Self.randomMask
        guard random != 0, random != Self.randomMask else { return nil }
        self.value = value
    }

    /// A fresh address from 46 bits of `generator`. The two forbidden draws (all 0, all 1; 2 in 2^46) have their
    /// lowest bit flipped, so one draw always suffices, whatever the generator returns.
    package init(using generator: inout some RandomNumberGenerator) {
        var random = generator.next() & Self.randomMask
        if random == 0 || random == Self.randomMask { random ^= 1 }
        value = Self.typeMask | random
    }

    /// The six bytes in wire order: least significant first, as HCI commands and events carry addresses.
    package var littleEndianBytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// `C1:02:03:04:05:06`: most significant byte first, as `btmon` and `hciconfig` print addresses.
    package var description: String {
        littleEndianBytes.reversed().map { $0.hexDigits(2, uppercase: true) }.joined(separator: ":")
    }
}
