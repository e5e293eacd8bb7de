/// Why a report or message cannot be framed as CTAPHID packets.
public enum CTAPHIDFramingError: Error, Hashable, Sendable {
    /// A report must be exactly ``CTAPHIDPacket/reportSize`` bytes; this one had the given size.
    case wrongReportSize(Int)
    /// The data does not fit into one packet of this kind, whose capacity is given.
    case dataTooLong(Int, capacity: Int)
    /// A message payload is longer than ``CTAPHIDPacket/maximumMessageLength``.
    case messageTooLong(Int)
    /// A continuation sequence number above ``CTAPHIDPacket/maximumSequence``.
    case sequenceOutOfRange(UInt8)
}

/// One 64-byte CTAPHID report (CTAP 2.1 §11.2.4), parsed.
///
/// ```
/// initialization: CID(4, big-endian) | CMD | 0x80 | BCNTH | BCNTL | DATA(57)
/// continuation:   CID(4, big-endian) | SEQ (0…127)  | DATA(59)
/// ```
public struct CTAPHIDPacket: Hashable, Sendable {
    /// The size of every report: 64 bytes.
    public static let reportSize = 64
    /// The data capacity of an initialization packet: 57 bytes.
    public static let initializationDataSize = 57
    /// The data capacity of a continuation packet: 59 bytes.
    public static let continuationDataSize = 59
    /// The highest continuation sequence number.
    public static let maximumSequence: UInt8 = 127
    /// The longest message one initialization and 128 continuation packets can carry: 7609 bytes.
    public static let maximumMessageLength = initializationDataSize + (Int(maximumSequence) + 1) * continuationDataSize

    /// What the packet's fifth byte says.
    public enum Kind: Hashable, Sendable {
        /// The first packet of a message: its command and the length of the whole payload (BCNT).
        case initialization(command: CTAPHIDCommand, payloadLength: UInt16)
        /// A following packet of a message, numbered from 0.
        case continuation(sequence: UInt8)
    }

    /// The channel the packet belongs to.
    public var channel: ChannelID
    /// Initialization or continuation, with its header fields.
    public var kind: Kind
    /// The data bytes: 57 (initialization) or 59 (continuation) when parsed from a report, padding included.
    public var data: [UInt8]

    /// Creates a packet; `data` is zero-padded to the capacity of its kind when serialized.
    public init(channel: ChannelID, kind: Kind, data: [UInt8]) throws(CTAPHIDFramingError) {
        let capacity = Self.capacity(of: kind)
        guard data.count <= capacity else { throw .dataTooLong(data.count, capacity: capacity) }
        if case .continuation(let sequence) = kind, sequence > Self.maximumSequence {
            throw .sequenceOutOfRange(sequence)
        }
        (self.channel, self.kind, self.data) = (channel, kind, data)
    }

    /// Parses one report, which must be exactly 64 bytes.
    public init(report: [UInt8]) throws(CTAPHIDFramingError) {
        guard report.count == Self.reportSize else { throw .wrongReportSize(report.count) }
        let base = report.startIndex
        channel = ChannelID(bigEndianBytes: report)
        let typeByte = report[base + 4]
        if typeByte & 0x80 != 0 {
            let length = UInt16(report[base + 5]) << 8 | UInt16(report[base + 6])
            kind = .initialization(command: CTAPHIDCommand(rawValue: typeByte), payloadLength: length)
            data = Array(report[(base + 7)...])
        } else {
            kind = .continuation(sequence: typeByte)
            data = Array(report[(base + 5)...])
        }
    }

    /// The 64-byte report, zero-padded.
    public var report: [UInt8] {
        var report = channel.bytes
        report.reserveCapacity(Self.reportSize)
        switch kind {
        case .initialization(let command, let length):
            report += [
                0x80 | command.rawValue, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
            ]
        case .continuation(let sequence):
            report.append(sequence)
        }
        report += data.prefix(Self.reportSize - report.count)
        report += repeatElement(0, count: Self.reportSize - report.count)
        return report
    }

    private static func capacity(of kind: Kind) -> Int {
        switch kind {
        case .initialization: initializationDataSize
        case .continuation: continuationDataSize
        }
    }
}

/// A whole CTAPHID message: a command and its payload on one channel.
public struct CTAPHIDMessage: Hashable, Sendable {
    /// The channel the message belongs to.
    public let channel: ChannelID
    /// The command.
    public let command: CTAPHIDCommand
    /// The payload, at most ``CTAPHIDPacket/maximumMessageLength`` bytes.
    public let payload: [UInt8]

    /// Creates a message, checking that it fits into 129 packets.
    public init(channel: ChannelID, command: CTAPHIDCommand, payload: [UInt8]) throws(CTAPHIDFramingError) {
        guard payload.count <= CTAPHIDPacket.maximumMessageLength else { throw .messageTooLong(payload.count) }
        (self.channel, self.command, self.payload) = (channel, command, payload)
    }

    /// For payloads already known to fit.
    init(uncheckedChannel channel: ChannelID, command: CTAPHIDCommand, payload: [UInt8]) {
        (self.channel, self.command, self.payload) = (channel, command, payload)
    }

    /// The message split into 64-byte reports: one initialization packet, then continuation packets 0, 1, 2, …
    public var reports: [[UInt8]] {
        let channelBytes = channel.bytes
        let length = payload.count
        var reports: [[UInt8]] = []
        let beyondFirst = max(0, length - CTAPHIDPacket.initializationDataSize)
        let continuations = (beyondFirst + CTAPHIDPacket.continuationDataSize - 1) / CTAPHIDPacket.continuationDataSize
        reports.reserveCapacity(1 + continuations)

        var first = channelBytes
        first += [0x80 | command.rawValue, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        first += payload.prefix(CTAPHIDPacket.initializationDataSize)
        reports.append(Self.padded(first))

        var offset = CTAPHIDPacket.initializationDataSize
        var sequence: UInt8 = 0
        while offset < length {
            let end = min(offset + CTAPHIDPacket.continuationDataSize, length)
            reports.append(Self.padded(channelBytes + [sequence] + payload[offset..<end]))
            offset = end
            sequence &+= 1
        }
        return reports
    }

    private static func padded(_ report: [UInt8]) -> [UInt8] {
        report + repeatElement(0, count: CTAPHIDPacket.reportSize - report.count)
    }
}
