import CBlueZ
import TestSupport
import Testing

@testable import Proximity
@testable import ProximityIO

/// The command bytes against `hcitool cmd` lines that worked on a real kernel (platform notes) and BlueZ's
/// `lib/hci.h`; the event parser against hand-built events and hostile input.
struct HCICodecTests {
    static let eid = (1...20).map { UInt8($0) }

    @Test func advertisingParametersMatchTheHcitoolLine() {
        // hcitool -i hci0 cmd 0x08 0x0006 20 00 20 00 03 00 00 00 00 00 00 00 00 07 00
        #expect(
            HCICommand.setAdvertisingParameters(interval: 0x0020).packet
                == bytes("01 06 20 0F 20 00 20 00 03 00 00 00 00 00 00 00 00 07 00"))
        #expect(
            HCICommand.setAdvertisingParameters(interval: BlueZOptions().advertisingInterval).packet
                == bytes("01 06 20 0F A0 00 A0 00 03 00 00 00 00 00 00 00 00 07 00"))
    }

    @Test func advertisingDataMatchesTheHcitoolLine() {
        // hcitool -i hci0 cmd 0x08 0x0008 18 17 16 F9 FF <20-byte EID> <pad to 31>
        let packet = HCICommand.setAdvertisingData(cableAdvert(Self.eid)).packet
        #expect(packet == bytes("01 08 20 20 18 17 16 F9 FF") + Self.eid + [UInt8](repeating: 0, count: 7))
        #expect(HCICommand.setAdvertisingData([]).packet == bytes("01 08 20 20") + [UInt8](repeating: 0, count: 32))
        let full = [UInt8](repeating: 0xAB, count: 31)
        #expect(HCICommand.setAdvertisingData(full).packet == bytes("01 08 20 20 1F") + full)
    }

    @Test func enableAndScanCommands() {
        #expect(HCICommand.setAdvertisingEnable(true).packet == bytes("01 0A 20 01 01"))  // hcitool cmd 0x08 0x000a 01
        #expect(HCICommand.setAdvertisingEnable(false).packet == bytes("01 0A 20 01 00"))
        #expect(
            HCICommand.setScanParameters(interval: 0x0010, window: 0x0010).packet
                == bytes("01 0B 20 07 00 10 00 10 00 00 00"))
        #expect(
            HCICommand.setScanParameters(interval: 0x1234, window: 0x0056).packet
                == bytes("01 0B 20 07 00 34 12 56 00 00 00"))
        #expect(HCICommand.setScanEnable(true).packet == bytes("01 0C 20 02 01 00"))
        #expect(HCICommand.setScanEnable(false).packet == bytes("01 0C 20 02 00 00"))
    }

    @Test func randomAddressAndRandomOwnAddressType() throws {
        // hcitool -i hci0 cmd 0x08 0x0005 06 05 04 03 02 C1: the address C1:02:03:04:05:06, least significant first.
        let address = try #require(StaticRandomAddress(value: 0xC1_02_03_04_05_06))
        #expect(HCICommand.setRandomAddress(address).packet == bytes("01 05 20 06 06 05 04 03 02 C1"))
        #expect(address.description == "C1:02:03:04:05:06")
        #expect(
            HCICommand.setAdvertisingParameters(interval: 0x00A0, ownAddressType: .random).packet
                == bytes("01 06 20 0F A0 00 A0 00 03 01 00 00 00 00 00 00 00 07 00"))
        #expect(HCICommand.setRandomAddress(address).description == "LE Set Random Address")
    }

    /// Core 5.4, Vol 6 Part B §1.3.2.1: static means the top two bits are 11 and the other 46 are not all equal.
    @Test func staticRandomAddressRules() {
        for valid: UInt64 in [0xC0_00_00_00_00_01, 0xFF_FF_FF_FF_FF_FE, 0xC1_02_03_04_05_06, 0xF9_86_B9_C3_DC_AF] {
            #expect(StaticRandomAddress(value: valid)?.value == valid, "\(valid)")
        }
        for invalid: UInt64 in [
            0, 0xC0_00_00_00_00_00, 0xFF_FF_FF_FF_FF_FF, 0x3F_FF_FF_FF_FF_FF, 0x40_00_00_00_00_01,
            0x80_00_00_00_00_01, 0x01_C0_00_00_00_00_01, .max,
        ] {
            #expect(StaticRandomAddress(value: invalid) == nil, "\(invalid)")
        }
    }

    /// Whatever the generator returns, one draw makes a valid address; a seeded generator replays exactly.
    @Test func staticRandomAddressFromAnyGenerator() throws {
        struct Constant: RandomNumberGenerator {
            var value: UInt64
            mutating func next() -> UInt64 { value }
        }
        var zeros = Constant(value: 0)
        #expect(StaticRandomAddress(using: &zeros).value == 0xC0_00_00_00_00_01)
        var ones = Constant(value: .max)
        #expect(StaticRandomAddress(using: &ones).value == 0xFF_FF_FF_FF_FF_FE)
        var typeBitsOnly = Constant(value: 0x3F_FF_FF_FF_FF_FF << 2)
        #expect(StaticRandomAddress(using: &typeBitsOnly).value == 0xFF_FF_FF_FF_FF_FC)

        var seeded = SeededRandom(seed: BlueZRadioTests.addressSeed)
        let first = StaticRandomAddress(using: &seeded)
        #expect(first.littleEndianBytes == BlueZRadioTests.address)
        #expect(first.description == "F9:86:B9:C3:DC:AF")
        var random = SeededRandom(seed: 0xB1E2_0004)
        for _ in 0..<1000 {
            let address = StaticRandomAddress(using: &random)
            #expect(StaticRandomAddress(value: address.value) == address)
            #expect(address.littleEndianBytes.count == 6)
            #expect(address.littleEndianBytes[5] & 0xC0 == 0xC0)
        }
    }

    /// What a packet read while a command waits says about it.
    @Test func commandAnswers() {
        let command = HCICommand.setRandomAddress(StaticRandomAddress(value: 0xC1_02_03_04_05_06)!)
        let answers: [([UInt8], HCICommandAnswer)] = [
            (commandComplete(0x2005, status: 0x00), .status(.success)),
            (commandComplete(0x2005, status: 0x0C), .status(.commandDisallowed)),
            (commandStatus(0x2005, status: 0x12), .status(.invalidParameters)),
            (bytes("04 0E 04 01 05 20 00 FF"), .unrelated),  // its length does not add up
            (bytes("04 0E 03 01 05 20"), .noStatus),
            (commandComplete(0x2006, status: 0x00), .unrelated),
            (commandStatus(0x0C03, status: 0x00), .unrelated),
            (advertisingReportEvent([ReportFields(data: [1])]), .unrelated),
            (bytes("04 05 04 00 40 00 13"), .unrelated),
            ([], .unrelated),
            (bytes("01 05 20 00"), .unrelated),
        ]
        for (packet, expected) in answers {
            #expect(command.answer(in: packet) == expected, "\(packet)")
        }
    }

    /// The socket filter matches what BlueZ's own `hci_filter_*` helpers build.
    @Test func eventFilterAgreesWithBlueZHelpers() {
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        for event in [EVT_CMD_COMPLETE, EVT_CMD_STATUS, EVT_LE_META_EVENT] { hci_filter_set_event(event, &filter) }
        let backend = HCIEventFilter.backend
        #expect(backend.typeMask == filter.type_mask)
        #expect(backend.eventMask == [filter.event_mask.0, filter.event_mask.1])
        #expect(HCIEventFilter(types: [0x04, 200], events: [0x3E, 0x3F, 64, 255]).eventMask == [0, 0xC000_0000])
    }

    /// Opcodes and parameter sizes as BlueZ's own headers define them.
    @Test func layoutsAgreeWithBlueZHeaders() {
        func opcode(_ ocf: Int32) -> UInt16 { UInt16(OGF_LE_CTL) << 10 | UInt16(ocf) }
        let commands: [(HCICommand, UInt16, Int32)] = [
            (
                .setRandomAddress(StaticRandomAddress(value: 0xC0_00_00_00_00_01)!), opcode(OCF_LE_SET_RANDOM_ADDRESS),
                LE_SET_RANDOM_ADDRESS_CP_SIZE
            ),
            (
                .setAdvertisingParameters(interval: 0xA0), opcode(OCF_LE_SET_ADVERTISING_PARAMETERS),
                LE_SET_ADVERTISING_PARAMETERS_CP_SIZE
            ),
            (.setAdvertisingData([1, 2]), opcode(OCF_LE_SET_ADVERTISING_DATA), LE_SET_ADVERTISING_DATA_CP_SIZE),
            (.setAdvertisingEnable(true), opcode(OCF_LE_SET_ADVERTISE_ENABLE), LE_SET_ADVERTISE_ENABLE_CP_SIZE),
            (
                .setScanParameters(interval: 16, window: 16), opcode(OCF_LE_SET_SCAN_PARAMETERS),
                LE_SET_SCAN_PARAMETERS_CP_SIZE
            ),
            (.setScanEnable(true), opcode(OCF_LE_SET_SCAN_ENABLE), LE_SET_SCAN_ENABLE_CP_SIZE),
        ]
        for (command, expectedOpcode, size) in commands {
            #expect(command.opcode == expectedOpcode)
            #expect(command.parameters.count == Int(size))
            #expect(command.packet.count == 4 + Int(size))
            #expect(command.packet[0] == UInt8(HCI_COMMAND_PKT))
        }
        #expect(MemoryLayout<le_set_advertising_parameters_cp>.size == 15)
        #expect(HCIEvent.packetType == UInt8(HCI_EVENT_PKT))
        #expect(HCIEvent.commandCompleteCode == UInt8(EVT_CMD_COMPLETE))
        #expect(HCIEvent.commandStatusCode == UInt8(EVT_CMD_STATUS))
        #expect(HCIEvent.leMetaCode == UInt8(EVT_LE_META_EVENT))
        #expect(HCIEvent.advertisingReportSubevent == UInt8(EVT_LE_ADVERTISING_REPORT))
        #expect(LinuxHCISocket.deviceUpRequest == 0x4004_48C9)  // _IOW('H', 201, int)
    }

    @Test func commandCompleteAndStatus() throws {
        #expect(
            try HCIEvent(packet: bytes("04 0E 04 01 08 20 12"))
                == .commandComplete(opcode: 0x2008, returnParameters: [0x12]))
        #expect(try HCIEvent(packet: bytes("04 0E 03 01 00 00")) == .commandComplete(opcode: 0, returnParameters: []))
        #expect(
            try HCIEvent(packet: bytes("04 0F 04 0C 01 0A 20"))
                == .commandStatus(opcode: 0x200A, status: .commandDisallowed))
        #expect(try HCIEvent(packet: bytes("04 05 04 00 40 00 13")) == .other(code: 0x05, subevent: nil))
        #expect(try HCIEvent(packet: bytes("04 3E 02 01 00")) == .other(code: 0x3E, subevent: 0x01))
    }

    @Test func oneAdvertisingReport() throws {
        let event = bytes("04 3E 24 02 01 03 01 66 55 44 33 22 11 18") + cableAdvert(Self.eid) + [0xC4]
        let expected = HCIAdvertisingReport(
            eventType: 0x03, addressType: 0x01, address: [0x66, 0x55, 0x44, 0x33, 0x22, 0x11],
            data: cableAdvert(Self.eid), rssi: -60, isComplete: true)
        #expect(try HCIEvent(packet: event) == .advertisingReports([expected]))
        #expect(
            event
                == advertisingReportEvent([ReportFields(addressType: 1, address: expected.address, data: expected.data)]
                ))
    }

    @Test func threeAdvertisingReports() throws {
        let fields = [
            ReportFields(eventType: 0x00, data: [0x02, 0x01, 0x06], rssi: -40),
            ReportFields(eventType: 0x03, addressType: 1, address: [1, 2, 3, 4, 5, 6], data: [], rssi: 127),
            ReportFields(eventType: 0x03, data: cableAdvert(Self.eid), rssi: -99),
        ]
        let parsed = try HCIEvent(packet: advertisingReportEvent(fields))
        let expected = fields.map {
            HCIAdvertisingReport(
                eventType: UInt16($0.eventType), addressType: $0.addressType, address: $0.address, data: $0.data,
                rssi: $0.rssi, isComplete: true)
        }
        #expect(parsed == .advertisingReports(expected))
    }

    @Test func extendedAdvertisingReport() throws {
        func report(eventType: UInt16, data: [UInt8]) -> [UInt8] {
            [UInt8(eventType & 0xFF), UInt8(eventType >> 8), 0x01, 1, 2, 3, 4, 5, 6, 0x01, 0x00, 0xFF, 0x7F, 0xD0]
                + [0, 0, 0x00, 0, 0, 0, 0, 0, 0, UInt8(data.count)] + data
        }
        // Legacy ADV_NONCONN_IND as an extended report (0x0010), then an incomplete one (data status 01).
        let parameters =
            [0x0D, 0x02] + report(eventType: 0x0010, data: cableAdvert(Self.eid))
            + report(eventType: 0x0020, data: [1, 2, 3])
        let parsed = try HCIEvent(packet: [0x04, 0x3E, UInt8(parameters.count)] + parameters)
        #expect(
            parsed
                == .advertisingReports([
                    HCIAdvertisingReport(
                        eventType: 0x0010, addressType: 1, address: [1, 2, 3, 4, 5, 6], data: cableAdvert(Self.eid),
                        rssi: -48, isComplete: true),
                    HCIAdvertisingReport(
                        eventType: 0x0020, addressType: 1, address: [1, 2, 3, 4, 5, 6], data: [1, 2, 3], rssi: -48,
                        isComplete: false),
                ]))
    }

    static let hostile: [(String, HCIEventError)] = [
        ("", .notAnEvent),
        ("01 03 0C 00", .notAnEvent),
        ("04 0E", .truncated("event header")),
        ("04 0E 04 01 08 20", .lengthMismatch(declared: 4, actual: 3)),
        ("04 0E 02 01 08 20", .lengthMismatch(declared: 2, actual: 3)),
        ("04 0E 02 01 08", .truncated("Command Complete")),
        ("04 0F 03 00 01 08", .truncated("Command Status")),
        ("04 3E 00", .truncated("LE Meta subevent")),
        ("04 3E 01 02", .truncated("number of reports")),
        ("04 3E 02 02 00", .noReports),
        ("04 3E 0C 02 01 03 00 01 02 03 04 05 06 05 AA", .truncated("report data")),
        ("04 3E 0B 02 01 03 00 01 02 03 04 05 06 00", .truncated("report RSSI")),
        ("04 3E 0C 02 02 03 00 01 02 03 04 05 06 00 C4", .truncated("report event type")),
        ("04 3E 0D 02 01 03 00 01 02 03 04 05 06 00 C4 FF", .trailingBytes(1)),
        ("04 3E 08 02 01 03 00 01 02 03 04", .truncated("report address")),
        ("04 3E 0B 02 01 03 00 01 02 03 04 05 06 20", .dataTooLong(32)),
        ("04 3E 04 0D 01 10 00", .truncated("report address type")),
    ]

    @Test(arguments: hostile) func rejects(hex: String, expected: HCIEventError) {
        #expect(throws: expected) { try HCIEvent(packet: bytes(hex)) }
    }

    /// Mutated valid events and random bytes: each gives a value or a typed error, and every accepted report is
    /// consistent with the bytes it came from.
    @Test func fuzz() {
        var random = SeededRandom(seed: 0xB1E2_0001)
        var accepted = 0
        var reportsSeen = 0
        for round in 0..<5000 {
            let input: [UInt8]
            switch round % 3 {
            case 0:
                let fields = (0..<1 + random.below(3)).map { _ in
                    ReportFields(
                        eventType: UInt8(random.below(5)), address: random.bytes(6),
                        data: random.bytes(random.below(32)),
                        rssi: Int8(truncatingIfNeeded: random.below(256)))
                }
                var mutated = random.mutate(advertisingReportEvent(fields))
                if random.below(2) == 0, mutated.count >= 3 {
                    mutated[2] = UInt8(truncatingIfNeeded: mutated.count - 3)
                }
                input = mutated
            case 1:
                let body = [UInt8(random.below(2) == 0 ? 0x02 : 0x0D)] + random.bytes(random.below(80))
                input = [0x04, 0x3E, UInt8(truncatingIfNeeded: body.count)] + body
            default:
                input = random.bytes(random.below(40))
            }
            guard let event = try? HCIEvent(packet: input) else { continue }
            accepted += 1
            if case .advertisingReports(let reports) = event {
                #expect(!reports.isEmpty)
                for report in reports {
                    #expect(report.address.count == 6)
                    #expect(report.data.count < input.count)
                    if !report.isComplete || report.eventType > 0xFF { continue }
                    #expect(report.data.count <= 31)
                }
                reportsSeen += reports.count
            }
        }
        #expect(accepted > 100)
        #expect(reportsSeen > 100)
    }
}
