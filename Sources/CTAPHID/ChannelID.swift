/// A CTAPHID channel identifier (CTAP 2.1 §11.2.4): four bytes, big-endian on the wire.
///
/// Two values are reserved: ``reserved`` (0) is never valid, and ``broadcast`` (0xFFFFFFFF) only carries
/// `CTAPHID_INIT` requests that ask for a new channel.
public struct ChannelID: RawRepresentable, Hashable, Sendable {
    /// The identifier as a number.
    public var rawValue: UInt32

    /// Wraps a channel identifier.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The reserved identifier 0, which no channel may use.
    public static let reserved = ChannelID(rawValue: 0)
    /// The broadcast identifier 0xFFFFFFFF, used to allocate a channel with `CTAPHID_INIT`.
    public static let broadcast = ChannelID(rawValue: 0xFFFF_FFFF)

    /// Reads an identifier from the first four bytes of `bytes`, big-endian.
    init<Bytes: Collection<UInt8>>(bigEndianBytes bytes: Bytes) {
        self.rawValue = bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The four big-endian bytes that carry this identifier on the wire.
    public var bytes: [UInt8] {
        [
            UInt8(truncatingIfNeeded: rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
            UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue),
        ]
    }
}

extension ChannelID: CustomStringConvertible {
    /// Eight hexadecimal digits, as the identifier appears in a packet dump.
    public var description: String {
        let digits = String(rawValue, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
