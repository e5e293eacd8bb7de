import Basics
import CBOR
import Hybrid
import Testing

struct AdvertisingDataTests {
    static let advert = [UInt8](hex: "027d84ed6076b55e247c830f82955e4d126e7f43")!

    @Test func caBLEAdvertisingDataLayout() throws {
        let data = try AdvertisingData.caBLE(advert: Self.advert)
        #expect(data.bytes == [0x03, 0x03, 0xF9, 0xFF, 0x17, 0x16, 0xF9, 0xFF] + Self.advert)
        #expect(data.bytes.count == 28)
        #expect(!data.structures.contains { $0.type == .flags })
        #expect(try AdvertisingData(bytes: data.bytes) == data)
        #expect(data.caBLEAdvert == Self.advert)
        let google = try AdvertisingData.caBLE(advert: Self.advert, serviceUUID: .googleCable)
        #expect(google.bytes == [0x03, 0x03, 0xE2, 0xFD, 0x17, 0x16, 0xE2, 0xFD] + Self.advert)
        #expect(google.caBLEAdvert == Self.advert)
    }

    @Test func buildersRefuseWhatDoesNotFit() {
        #expect(throws: AdvertisingDataError.tooLongForLegacyAdvertising(32)) {
            try AdvertisingData.caBLE(advert: [UInt8](repeating: 0, count: 24))
        }
        #expect(throws: AdvertisingDataError.dataTooLong(255)) {
            try ADStructure(type: .manufacturerData, data: [UInt8](repeating: 0, count: 255))
        }
        #expect(throws: AdvertisingDataError.dataTooLong(255)) {
            try ADStructure(serviceUUID: .fidoCable, serviceData: [UInt8](repeating: 0, count: 253))
        }
    }

    /// What a scanner reports: flags, a name, other service data and manufacturer data around the caBLE entry.
    @Test func findsTheAdvertAmongOtherStructures() throws {
        let bytes: [UInt8] =
            [0x02, 0x01, 0x06]  // flags
            + [0x05, 0x09] + Array("Pixe".utf8)  // name
            + [0x05, 0x16, 0x0F, 0x18, 0x64, 0x00]  // battery service data
            + [0x17, 0x16, 0xF9, 0xFF] + Self.advert
            + [0x01, 0xFF]  // empty manufacturer data
        let data = try AdvertisingData(bytes: bytes)
        #expect(data.structures.count == 5)
        #expect(data.bytes == bytes)
        #expect(data.serviceData(for: ServiceUUID16(rawValue: 0x180F)) == [0x64, 0x00])
        #expect(data.caBLEAdvert == Self.advert)
    }

    /// Chromium reads Google's UUID first, and only exactly 20 bytes count.
    @Test func chromiumsChoiceOfServiceData() throws {
        let other = [UInt8](repeating: 0xEE, count: 20)
        let both = try AdvertisingData(
            bytes: [0x17, 0x16, 0xF9, 0xFF] + Self.advert + [0x17, 0x16, 0xE2, 0xFD] + other)
        #expect(both.caBLEAdvert == other)
        // caBLE v1's 18-byte FDE2 data hides FFF9, as in Chromium.
        let v1 = try AdvertisingData(
            bytes: [0x15, 0x16, 0xE2, 0xFD] + [UInt8](repeating: 1, count: 18) + [0x17, 0x16, 0xF9, 0xFF] + Self.advert)
        #expect(v1.caBLEAdvert == nil)
        // A CTAP 2.3-style suffix makes the service data longer than 20 bytes: not an advert here.
        let longer = try AdvertisingData(bytes: [0x1A, 0x16, 0xF9, 0xFF] + Self.advert + [0xA1, 0x01, 0x19])
        #expect(longer.serviceData(for: .fidoCable)?.count == 23)
        #expect(longer.caBLEAdvert == nil)
        let shorter = try AdvertisingData(bytes: [0x16, 0x16, 0xF9, 0xFF] + Self.advert.dropLast())
        #expect(shorter.caBLEAdvert == nil)
        // Service data too short for a UUID, and other 0x16-less UUID lists, are skipped.
        let odd = try AdvertisingData(bytes: [0x02, 0x16, 0xF9, 0x03, 0x03, 0xF9, 0xFF])
        #expect(odd.structures.count == 2)
        #expect(odd.serviceData(for: .fidoCable) == nil)
        #expect(odd.caBLEAdvert == nil)
    }

    @Test func zeroLengthEndsTheData() throws {
        let caBLE = try AdvertisingData.caBLE(advert: Self.advert).bytes
        let padded = try AdvertisingData(bytes: caBLE + [0, 0, 0])
        #expect(padded.bytes == caBLE)
        #expect(padded.caBLEAdvert == Self.advert)
        let early = try AdvertisingData(bytes: [0x00, 0x17, 0x16, 0xF9, 0xFF] + Self.advert)
        #expect(early.structures.isEmpty && early.caBLEAdvert == nil)
        #expect(try AdvertisingData(bytes: []).structures.isEmpty)
    }

    @Test(arguments: [
        ([UInt8]([0x01]), 0), ([0x02, 0x01], 0), ([0x02, 0x01, 0x06, 0x05, 0x09, 0x41], 3),
        ([0xFF] + [UInt8](repeating: 0, count: 200), 0),
        ([0x17, 0x16, 0xF9, 0xFF] + Array(AdvertisingDataTests.advert.dropLast()), 0),
    ])
    func structuresRunningPastTheEndAreRejected(bytes: [UInt8], offset: Int) {
        #expect(throws: AdvertisingDataError.truncated(offset: offset)) { try AdvertisingData(bytes: bytes) }
    }

    @Test func uuidForms() {
        #expect(ServiceUUID16.fidoCable.bytes == [0xF9, 0xFF])
        #expect(ServiceUUID16.googleCable.description == "0xFDE2")
        #expect(ServiceUUID16(rawValue: 0x1F).description == "0x001F")
    }
}
