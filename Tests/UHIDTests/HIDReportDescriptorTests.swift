import Testing
import UHID

struct HIDReportDescriptorTests {
    static let keyboard: [UInt8] = [
        0x05, 0x01, 0x09, 0x06, 0xA1, 0x01,  // Generic Desktop, Keyboard, Collection (Application)
        0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7, 0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x08, 0x81, 0x02,
        0xC0,
    ]

    @Test func theVirtualKeysDescriptorIsFIDO() throws {
        let descriptor = try HIDReportDescriptor(bytes: FIDOHIDDevice.reportDescriptor)
        #expect(descriptor.topLevelUsages == [.fidoCTAPHID])
        #expect(descriptor.isFIDO)
    }

    @Test func aKeyboardIsNot() throws {
        let descriptor = try HIDReportDescriptor(bytes: Self.keyboard)
        #expect(descriptor.topLevelUsages == [HIDReportDescriptor.Usage(page: 0x01, id: 0x06)])
        #expect(!descriptor.isFIDO)
        #expect(try !HIDReportDescriptor(bytes: []).isFIDO)
    }

    @Test func aCompositeDeviceWithAFIDOInterfaceIs() throws {
        // A keyboard (OTP) and FIDO in one descriptor, as some keys report them; nested collections do not count.
        let nested: [UInt8] = [0x06, 0xD0, 0xF1, 0x09, 0x02, 0xA1, 0x02, 0x09, 0x01, 0xA1, 0x00, 0xC0, 0xC0]
        let descriptor = try HIDReportDescriptor(bytes: Self.keyboard + nested + FIDOHIDDevice.reportDescriptor)
        #expect(
            descriptor.topLevelUsages == [
                HIDReportDescriptor.Usage(page: 0x01, id: 0x06), HIDReportDescriptor.Usage(page: 0xF1D0, id: 0x02),
                .fidoCTAPHID,
            ])
        #expect(descriptor.isFIDO)
    }

    @Test func extendedUsagesCarryTheirPage() throws {
        // Usage Page (Generic Desktop), then a four-byte usage naming FIDO's page itself.
        let bytes: [UInt8] = [0x05, 0x01, 0x0B, 0x01, 0x00, 0xD0, 0xF1, 0xA1, 0x01, 0xC0]
        #expect(try HIDReportDescriptor(bytes: bytes).topLevelUsages == [.fidoCTAPHID])
    }

    @Test func theUsagePageIsTheOneInEffectAtTheCollection() throws {
        let bytes: [UInt8] = [0x09, 0x01, 0x06, 0xD0, 0xF1, 0xA1, 0x01, 0xC0]
        #expect(try HIDReportDescriptor(bytes: bytes).isFIDO)
    }

    @Test func pushAndPopRestoreThePage() throws {
        let bytes: [UInt8] = [
            0x06, 0xD0, 0xF1, 0xA4,  // FIDO page, Push
            0x05, 0x01, 0xB4,  // Generic Desktop, Pop
            0x09, 0x01, 0xA1, 0x01, 0xC0,
        ]
        #expect(try HIDReportDescriptor(bytes: bytes).isFIDO)
    }

    @Test func longItemsAreSkipped() throws {
        let bytes: [UInt8] = [0xFE, 0x02, 0x10, 0xAA, 0xBB] + FIDOHIDDevice.reportDescriptor
        #expect(try HIDReportDescriptor(bytes: bytes).isFIDO)
    }

    @Test(arguments: [
        ([0x06, 0xD0] as [UInt8], 0), ([0x09, 0x01, 0x27, 0x01, 0x02], 2), ([0xFE, 0x05, 0x00, 1, 2], 0), ([0xFE], 0),
    ])
    func truncatedItemsAreRefused(_ bytes: [UInt8], _ offset: Int) {
        #expect(throws: HIDReportDescriptorError.truncatedItem(offset: offset)) {
            try HIDReportDescriptor(bytes: bytes)
        }
    }

    @Test func randomBytesNeverCrash() {
        var state: UInt64 = 0x5EED
        for _ in 0..<5000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(state % 40) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            state = state &* 6_364_136_223_846_793_005 &+ 1
            _ = try? HIDReportDescriptor(bytes: bytes)
        }
    }
}
