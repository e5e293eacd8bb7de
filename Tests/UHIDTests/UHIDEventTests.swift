import Testing
import UHID

/// Byte-exact checks of the codec, with every expected byte placed by hand at the offsets of `<linux/uhid.h>`.
struct UHIDEventTests {
    /// A zeroed event with the type, as little-endian `__u32`.
    func event(type: UInt32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 4380)
        bytes[0...3] = [UInt8(type & 0xFF), UInt8(type >> 8 & 0xFF), UInt8(type >> 16 & 0xFF), UInt8(type >> 24)]
        return bytes
    }

    @Test func create2IsByteExact() throws {
        let device = try FIDOHIDDevice.create(phys: "passkey/uhid/42")
        let bytes = try UHIDEvent.create2(device).bytes()

        var expected = event(type: 11)
        let name = Array("passkey (software authenticator)".utf8)
        expected[4..<(4 + name.count)] = name[...]
        let phys = Array("passkey/uhid/42".utf8)
        expected[132..<(132 + phys.count)] = phys[...]
        expected[260...261] = [34, 0]  // rd_size
        expected[262...263] = [0x03, 0x00]  // bus: BUS_USB
        expected[264...267] = [0x09, 0x12, 0, 0]  // vendor 0x1209
        expected[268...271] = [0x01, 0x00, 0, 0]  // product 0x0001
        expected[272...275] = [0x00, 0x01, 0, 0]  // version 0x0100
        let descriptor: [UInt8] = [
            0x06, 0xD0, 0xF1, 0x09, 0x01, 0xA1, 0x01,
            0x09, 0x20, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x81, 0x02,
            0x09, 0x21, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x91, 0x02,
            0xC0,
        ]
        expected[280..<(280 + 34)] = descriptor[...]
        #expect(bytes.count == 4380)
        #expect(bytes == expected)
        #expect(try UHIDEvent(bytes: bytes) == .create2(device))
    }

    @Test func descriptorDeclaresTheFIDOUsageAnd64ByteReports() {
        let descriptor = FIDOHIDDevice.reportDescriptor
        #expect(Array(descriptor.prefix(5)) == [0x06, 0xD0, 0xF1, 0x09, 0x01])
        // Both reports: Report Size 8 bits × Report Count 64.
        let reportShape: [UInt8] = [0x75, 0x08, 0x95, 0x40]
        let matches = (0...(descriptor.count - 4)).filter { Array(descriptor[$0..<($0 + 4)]) == reportShape }
        #expect(matches.count == 2)
        #expect(descriptor.last == 0xC0)
        #expect(FIDOHIDDevice.hidID == "0003:00001209:00000001")
    }

    @Test func input2IsByteExact() throws {
        let report = (0..<64).map { UInt8($0 + 1) }
        var expected = event(type: 12)
        expected[4...5] = [64, 0]
        expected[6..<70] = report[...]
        #expect(try UHIDEvent.input2(report).bytes() == expected)
        #expect(try UHIDEvent(bytes: expected) == .input2(report))
    }

    @Test func destroyIsTheTypeAlone() throws {
        #expect(try UHIDEvent.destroy.bytes() == event(type: 1))
    }

    @Test(arguments: [64, 65])
    func outputFromAHidrawWrite(size: Int) throws {
        let report = (0..<64).map { UInt8(0xFF - $0) }
        let data = size == 65 ? [0] + report : report
        var bytes = event(type: 6)
        bytes[4..<(4 + size)] = data[...]
        bytes[4100...4101] = [UInt8(size), 0]
        bytes[4102] = 1  // UHID_OUTPUT_REPORT
        let decoded = try UHIDEvent(bytes: bytes)
        #expect(decoded == .output(data: data, type: .output))
        guard case .output(let output, _) = decoded else {
            Issue.record("not an output event: \(decoded)")
            return
        }
        #expect(FIDOHIDDevice.report(fromOutput: output) == report)
    }

    @Test(arguments: [[UInt8](), [0], Array(repeating: 0, count: 63), [1] + Array(repeating: 0, count: 64)])
    func outputThatIsNoReport(data: [UInt8]) {
        #expect(FIDOHIDDevice.report(fromOutput: data) == nil)
    }

    @Test func kernelEvents() throws {
        var start = event(type: 2)
        start[4] = 0b110  // UHID_DEV_NUMBERED_OUTPUT_REPORTS | UHID_DEV_NUMBERED_INPUT_REPORTS
        #expect(try UHIDEvent(bytes: start) == .start(flags: 6))
        #expect(try UHIDEvent(bytes: event(type: 3)) == .stop)
        #expect(try UHIDEvent(bytes: event(type: 4)) == .open)
        #expect(try UHIDEvent(bytes: event(type: 5)) == .close)

        var getReport = event(type: 9)
        getReport[4...9] = [0x78, 0x56, 0x34, 0x12, 3, 0]
        #expect(try UHIDEvent(bytes: getReport) == .getReport(id: 0x1234_5678, reportNumber: 3, type: .feature))

        var setReport = event(type: 13)
        setReport[4...15] = [7, 0, 0, 0, 0, 0, 2, 0, 0xAA, 0xBB, 0, 0]
        #expect(
            try UHIDEvent(bytes: setReport) == .setReport(id: 7, reportNumber: 0, type: .feature, data: [0xAA, 0xBB]))
    }

    @Test func repliesAreByteExact() throws {
        var getReply = event(type: 10)
        getReply[4...11] = [0x78, 0x56, 0x34, 0x12, 5, 0, 0, 0]  // id, err EIO, size 0
        #expect(try UHIDEvent.getReportReply(id: 0x1234_5678, error: 5, data: []).bytes() == getReply)
        var setReply = event(type: 14)
        setReply[4...9] = [9, 0, 0, 0, 5, 0]
        #expect(try UHIDEvent.setReportReply(id: 9, error: 5).bytes() == setReply)
    }

    @Test func unknownTypesAreData() throws {
        for type: UInt32 in [0, 7, 8, 15, 0xFFFF_FFFF] {
            #expect(try UHIDEvent(bytes: event(type: type)) == .unknown(type: type))
        }
        // Unknown types need no union bytes at all.
        #expect(try UHIDEvent(bytes: [99, 0, 0, 0]) == .unknown(type: 99))
    }

    @Test func shortReadsAreRejected() throws {
        #expect(throws: UHIDCodecError.truncated(3)) { try UHIDEvent(bytes: [6, 0, 0]) }
        let output = Array(event(type: 6).prefix(4102))  // one byte short of rtype
        #expect(throws: UHIDCodecError.truncated(4102)) { try UHIDEvent(bytes: output) }
        let start = Array(event(type: 2).prefix(11))
        #expect(throws: UHIDCodecError.truncated(11)) { try UHIDEvent(bytes: start) }
        // Exactly as long as the member is enough.
        #expect(try UHIDEvent(bytes: Array(event(type: 6).prefix(4103))) == .output(data: [], type: .feature))
        #expect(try UHIDEvent(bytes: [3, 0, 0, 0]) == .stop)
    }

    @Test func sizesBeyondTheDataArrayAreRejected() throws {
        var output = event(type: 6)
        output[4100...4101] = [0x01, 0x10]  // 4097
        #expect(throws: UHIDCodecError.sizeOutOfRange(4097)) { try UHIDEvent(bytes: output) }
        #expect(throws: UHIDCodecError.fieldTooLong("data", length: 4097, capacity: 4096)) {
            try UHIDEvent.input2(Array(repeating: 0, count: 4097)).bytes()
        }
    }

    @Test func create2FieldsMustFit() {
        #expect(throws: UHIDCodecError.fieldTooLong("name", length: 128, capacity: 127)) {
            try UHIDCreate2(
                name: String(repeating: "n", count: 128), bus: 3, vendor: 1, product: 1, descriptor: [])
        }
        #expect(throws: UHIDCodecError.fieldTooLong("phys", length: 64, capacity: 63)) {
            try UHIDCreate2(
                name: "x", phys: String(repeating: "p", count: 64), bus: 3, vendor: 1, product: 1, descriptor: [])
        }
    }
}
