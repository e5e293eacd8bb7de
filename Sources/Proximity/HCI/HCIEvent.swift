/// Why an HCI event packet was not understood. The scanner skips such packets; they never crash it.
package enum HCIEventError: Error, Hashable, Sendable {
    /// The packet is not an event (its H4 indicator is not 0x04), or it is empty.
    case notAnEvent
    /// The header's parameter length disagrees with the bytes that follow it.
    case lengthMismatch(declared: Int, actual: Int)
    /// A field runs past the end of the parameters; the text names it.
    case truncated(String)
    /// Bytes are left over after the last advertising report.
    case trailingBytes(Int)
    /// An advertising report event says it carries no reports.
    case noReports
    /// A legacy advertising report carries more than 31 bytes of data.
    case dataTooLong(Int)
}

/// One advertisement seen by the controller, from an LE Advertising Report or LE Extended Advertising Report.
package struct HCIAdvertisingReport: Hashable, Sendable {
    /// The report's event type: for legacy reports 0x00–0x04 (0x03 is ADV_NONCONN_IND); for extended reports the
    /// 16-bit field, whose bits 5–6 give the data status.
    package var eventType: UInt16
    /// 0x00 public, 0x01 random, and so on.
    package var addressType: UInt8
    /// The advertiser's address as the wire carries it: least significant byte first.
    package var address: [UInt8]
    /// The advertising data (AD structures).
    package var data: [UInt8]
    /// Signal strength in dBm; 127 means not available.
    package var rssi: Int8
    /// Whether the report carries all of the advertisement's data. Legacy reports always do; an extended report
    /// may announce that more data follows in another report, or that the controller truncated it.
    package var isComplete: Bool
}

/// The events the BlueZ backend reads (Core 5.4, Vol 4 Part E §7.7). Pure: bytes in, values out.
package enum HCIEvent: Hashable, Sendable {
    /// Command Complete (0x0E): the command's opcode and its return parameters, whose first byte is the status
    /// for every command this backend sends.
    case commandComplete(opcode: UInt16, returnParameters: [UInt8])
    /// Command Status (0x0F).
    case commandStatus(opcode: UInt16, status: HCIStatus)
    /// LE Meta (0x3E) with LE Advertising Report (0x02) or LE Extended Advertising Report (0x0D): at least one report.
    case advertisingReports([HCIAdvertisingReport])
    /// Any other event, or an LE Meta event with another subevent; `subevent` is set for LE Meta.
    case other(code: UInt8, subevent: UInt8?)

    /// The H4 packet indicator of an event.
    package static let packetType: UInt8 = 0x04
    package static let commandCompleteCode: UInt8 = 0x0E
    package static let commandStatusCode: UInt8 = 0x0F
    package static let leMetaCode: UInt8 = 0x3E
    package static let advertisingReportSubevent: UInt8 = 0x02
    package static let extendedAdvertisingReportSubevent: UInt8 = 0x0D

    /// Parses one packet as a raw HCI socket delivers it: `0x04 ‖ event code ‖ parameter length ‖ parameters`.
    /// Every length is checked against the bytes present; an inconsistent packet is an error, never a crash.
    package init(packet: [UInt8]) throws(HCIEventError) {
        guard packet.count >= 3, packet[0] == Self.packetType else {
            guard packet.first == Self.packetType else { throw .notAnEvent }
            throw .truncated("event header")
        }
        let declared = Int(packet[2])
        guard declared == packet.count - 3 else { throw .lengthMismatch(declared: declared, actual: packet.count - 3) }
        var reader = ByteReader(packet[3...])
        switch packet[1] {
        case Self.commandCompleteCode:
            _ = try reader.byte("Command Complete")
            let opcode = try reader.uint16("Command Complete")
            self = .commandComplete(opcode: opcode, returnParameters: reader.rest())
        case Self.commandStatusCode:
            let status = try reader.byte("Command Status")
            _ = try reader.byte("Command Status")
            let opcode = try reader.uint16("Command Status")
            self = .commandStatus(opcode: opcode, status: HCIStatus(rawValue: status))
        case Self.leMetaCode:
            let subevent = try reader.byte("LE Meta subevent")
            switch subevent {
            case Self.advertisingReportSubevent:
                self = .advertisingReports(try Self.legacyReports(&reader))
            case Self.extendedAdvertisingReportSubevent:
                self = .advertisingReports(try Self.extendedReports(&reader))
            default:
                self = .other(code: Self.leMetaCode, subevent: subevent)
            }
        case let code:
            self = .other(code: code, subevent: nil)
        }
    }

    /// LE Advertising Report in the layout the Linux kernel and controllers use: each report's fields one after
    /// the other, `event type ‖ address type ‖ address (6) ‖ data length ‖ data ‖ RSSI`.
    private static func legacyReports(_ reader: inout ByteReader) throws(HCIEventError) -> [HCIAdvertisingReport] {
        let count = Int(try reader.byte("number of reports"))
        guard count > 0 else { throw .noReports }
        var reports: [HCIAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let eventType = try reader.byte("report event type")
            let addressType = try reader.byte("report address type")
            let address = try reader.bytes(6, "report address")
            let length = Int(try reader.byte("report data length"))
            guard length <= HCICommand.maximumAdvertisingDataCount else { throw .dataTooLong(length) }
            let data = try reader.bytes(length, "report data")
            let rssi = Int8(bitPattern: try reader.byte("report RSSI"))
            reports.append(
                HCIAdvertisingReport(
                    eventType: UInt16(eventType), addressType: addressType, address: address, data: data, rssi: rssi,
                    isComplete: true))
        }
        guard reader.isEmpty else { throw .trailingBytes(reader.remaining) }
        return reports
    }

    /// LE Extended Advertising Report: `event type (2) ‖ address type ‖ address (6) ‖ primary PHY ‖ secondary PHY ‖
    /// SID ‖ TX power ‖ RSSI ‖ periodic interval (2) ‖ direct address type ‖ direct address (6) ‖ data length ‖ data`.
    private static func extendedReports(_ reader: inout ByteReader) throws(HCIEventError) -> [HCIAdvertisingReport] {
        let count = Int(try reader.byte("number of reports"))
        guard count > 0 else { throw .noReports }
        var reports: [HCIAdvertisingReport] = []
        for _ in 0..<count {
            let eventType = try reader.uint16("report event type")
            let addressType = try reader.byte("report address type")
            let address = try reader.bytes(6, "report address")
            _ = try reader.bytes(3, "report PHYs and SID")
            _ = try reader.byte("report TX power")
            let rssi = Int8(bitPattern: try reader.byte("report RSSI"))
            _ = try reader.bytes(9, "report periodic interval and direct address")
            let length = Int(try reader.byte("report data length"))
            let data = try reader.bytes(length, "report data")
            reports.append(
                HCIAdvertisingReport(
                    eventType: eventType, addressType: addressType, address: address, data: data, rssi: rssi,
                    isComplete: eventType >> 5 & 0b11 == 0))
        }
        guard reader.isEmpty else { throw .trailingBytes(reader.remaining) }
        return reports
    }
}

/// The kernel filter on the backend's socket (`HCI_FILTER`, `struct hci_filter` in BlueZ's `lib/hci.h`): which
/// packet types and event codes reach it. Bit `n` of the type mask passes packet type `n`; bit `n % 32` of event
/// mask word `n / 32` passes event code `n`.
package struct HCIEventFilter: Hashable, Sendable {
    package var typeMask: UInt32 = 0
    package var eventMask: [UInt32] = [0, 0]

    /// Event packets only, and of them only the codes the backend reads: Command Complete, Command Status, LE Meta.
    package static let backend = HCIEventFilter(
        types: [HCIEvent.packetType],
        events: [HCIEvent.commandCompleteCode, HCIEvent.commandStatusCode, HCIEvent.leMetaCode])

    /// Passes the packet types in `types` (each below 32) and the event codes in `events` (each below 64).
    package init(types: [UInt8], events: [UInt8]) {
        for type in types where type < 32 { typeMask |= 1 << UInt32(type) }
        for code in events where code < 64 { eventMask[Int(code / 32)] |= 1 << UInt32(code % 32) }
    }
}

/// A bounds-checked cursor over an event's parameters.
private struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - index }
    var isEmpty: Bool { remaining == 0 }

    mutating func byte(_ field: String) throws(HCIEventError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated(field) }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func uint16(_ field: String) throws(HCIEventError) -> UInt16 {
        let pair = try bytes(2, field)
        return UInt16(pair[0]) | UInt16(pair[1]) << 8
    }

    mutating func bytes(_ count: Int, _ field: String) throws(HCIEventError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated(field) }
        defer { index += count }
        return Array(bytes[index..<index + count])
    }

    mutating func rest() -> [UInt8] {
        defer { index = bytes.endIndex }
        return Array(bytes[index...])
    }
}
