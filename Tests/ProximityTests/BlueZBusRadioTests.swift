import DBus
import Hybrid
import Synchronization
import Testing
import TestSupport

@testable import Proximity
@testable import ProximityIO

/// A caBLE advert's 20 bytes, and the advertising data `AdvertisingData.caBLE` makes of it.
private let advert: [UInt8] = Array(0..<20)
private let fff9 = "0000fff9-0000-1000-8000-00805f9b34fb"

@Suite("bluetoothd backend: translation")
struct BlueZBusTranslationTests {
    @Test("a caBLE advert becomes a broadcast advertisement with its UUID and service data")
    func advertisementProperties() throws {
        let data = try AdvertisingData.caBLE(advert: advert).bytes
        let properties = try BlueZBusTranslation.advertisementProperties(data, interval: .milliseconds(100))
        #expect(properties["Type"] == .string("broadcast"))
        #expect(properties["ServiceUUIDs"] == .strings([fff9]))
        #expect(properties["ServiceData"]?.dictionaryValue == [fff9: .bytes(advert)])
        #expect(properties["MinInterval"] == .uint32(100) && properties["MaxInterval"] == .uint32(100))
    }

    @Test("advertising data bluetoothd cannot express, or malformed, is refused with a reason")
    func unexpressibleData() {
        #expect(throws: ProximityError.failed("bluetoothd cannot send AD type 0x9; use --ble hci-raw")) {
            _ = try BlueZBusTranslation.advertisementProperties([3, 0x09, 0x41, 0x42], interval: .seconds(1))
        }
        #expect(throws: ProximityError.self) {
            _ = try BlueZBusTranslation.advertisementProperties([9, 0x16, 1], interval: .seconds(1))
        }
        #expect(throws: ProximityError.self) {
            _ = try BlueZBusTranslation.advertisementProperties([4, 0x03, 0xF9, 0xFF, 1], interval: .seconds(1))
        }
    }

    @Test("discovery signals give the service data back as advertising data, for this adapter's devices only")
    func discoverySignals() throws {
        let device = "/org/bluez/hci1/dev_C0_11_22_33_44_55"
        let properties = DBusValue.variantDictionary([
            "Address": .string("C0:11:22:33:44:55"),
            "ServiceData": .variantDictionary([
                fff9: .bytes(advert), "0000180f-0000-1000-8000-00805f9b34fb": .bytes([1]),
            ]),
        ])
        let added = DBusMessage(
            kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
            body: [
                .objectPath(device),
                .array(
                    elementSignature: "{sa{sv}}",
                    [.dictionaryEntry(key: .string("org.bluez.Device1"), value: properties)]),
            ])
        let bytes = try #require(BlueZBusTranslation.advertisingData(from: added, adapterPath: "/org/bluez/hci1"))
        let parsed = try AdvertisingData(bytes: bytes)
        #expect(parsed.caBLEAdvert == advert)
        #expect(parsed.serviceData(for: ServiceUUID16(rawValue: 0x180F)) == [1])
        #expect(BlueZBusTranslation.advertisingData(from: added, adapterPath: "/org/bluez/hci0") == nil)

        let changed = DBusMessage(
            kind: .signal, path: device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            body: [
                .string("org.bluez.Device1"),
                .variantDictionary(["ServiceData": .variantDictionary([fff9: .bytes(advert)])]),
                .strings([]),
            ])
        let again = try #require(BlueZBusTranslation.advertisingData(from: changed, adapterPath: "/org/bluez/hci1"))
        #expect(try AdvertisingData(bytes: again).caBLEAdvert == advert)

        // Only the RSSI changed, another interface, or a 128-bit UUID that is not on the base UUID: nothing.
        var rssiOnly = changed
        rssiOnly.body[1] = .variantDictionary(["RSSI": .int16(-40)])
        #expect(BlueZBusTranslation.advertisingData(from: rssiOnly, adapterPath: "/org/bluez/hci1") == nil)
        var otherInterface = changed
        otherInterface.body[0] = .string("org.bluez.MediaControl1")
        #expect(BlueZBusTranslation.advertisingData(from: otherInterface, adapterPath: "/org/bluez/hci1") == nil)
        var longUUID = changed
        longUUID.body[1] = .variantDictionary([
            "ServiceData": .variantDictionary(["6e400001-b5a3-f393-e0a9-e50e24dcca9e": .bytes(advert)])
        ])
        #expect(BlueZBusTranslation.advertisingData(from: longUUID, adapterPath: "/org/bluez/hci1") == nil)
    }

    @Test("16-bit UUIDs in their 128-bit form, both ways")
    func uuidStrings() {
        #expect(ServiceUUID16.fidoCable.uuidString == fff9)
        #expect(ServiceUUID16(rawValue: 0x0001).uuidString == "00000001-0000-1000-8000-00805f9b34fb")
        #expect(ServiceUUID16(uuidString: "0000FDE2-0000-1000-8000-00805F9B34FB") == .googleCable)
        for bad in [
            "", "0000fff9", "0001fff9-0000-1000-8000-00805f9b34fb", "0000+ff9-0000-1000-8000-00805f9b34fb",
            "0000fff9-0000-1000-8000-00805f9b34fc",
        ] {
            #expect(ServiceUUID16(uuidString: bad) == nil, "\(bad)")
        }
    }

    @Test("why bluetoothd could not be used, with the next step")
    func unavailableReasons() {
        let missing = BlueZBusTranslation.unavailable(
            .remote(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "The name is not activatable"),
            adapter: 0)
        #expect(
            missing
                == .unavailable(
                    "bluetoothd is not running (systemctl start bluetooth); or --ble hci-raw:0 (raw HCI, needs CAP_NET_RAW) or --ble sim"
                ))
        let noAdapter = BlueZBusTranslation.unavailable(
            .remote(name: "org.freedesktop.DBus.Error.UnknownObject", message: ""), adapter: 3)
        #expect(noAdapter.description.hasPrefix("no Bluetooth adapter hci3 (`bluetoothctl list` shows them)"))
    }
}

/// What the fake bluetoothd was asked, in order, and what it read back from the advertiser.
private final class FakeBlueZLog: Sendable {
    let calls = Mutex<[String]>([])
    let advertisement = Mutex<[String: DBusValue]?>(nil)
    let discoveryFilter = Mutex<[String: DBusValue]?>(nil)

    func record(_ line: String) { calls.withLock { $0.append(line) } }
    var recorded: [String] { calls.withLock { $0 } }
}

/// A bluetoothd on a private bus: adapter hci0 (powered or not), the advertising manager that reads the registered
/// advertisement's properties back as bluetoothd does, and discovery that reports one device with `advert`.
private func startFakeBlueZ(
    on bus: PrivateBusDaemon, powered: Bool = true, log: FakeBlueZLog
) async throws -> (DBusConnection, DBusExportedObject) {
    let connection = try await DBusConnection.open(.address(bus.address))
    var owner = try await connection.call(
        DBusMethod(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName"), [.string("org.bluez"), .uint32(4)]
    ).arguments
    try #require(try owner.next(UInt32.self) == 1)
    let adapter = try await connection.export(path: "/org/bluez/hci0") { call in
        let member = call.member ?? ""
        log.record("\(call.interface ?? "").\(member)")
        if let answer = DBusAnswer.properties(call, ["org.bluez.Adapter1": ["Powered": .bool(powered)]]) {
            return answer
        }
        switch (call.interface, member) {
        case ("org.bluez.Adapter1", "SetDiscoveryFilter"):
            log.discoveryFilter.withLock { $0 = call.body.first?.dictionaryValue }
            return .reply([])
        case ("org.bluez.Adapter1", "StartDiscovery"):
            Task {
                try? await connection.emitSignal(
                    path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                    [
                        .objectPath("/org/bluez/hci0/dev_C0_00_00_00_00_01"),
                        .array(
                            elementSignature: "{sa{sv}}",
                            [
                                .dictionaryEntry(
                                    key: .string("org.bluez.Device1"),
                                    value: .variantDictionary([
                                        "ServiceData": .variantDictionary([fff9: .bytes(advert)])
                                    ]))
                            ]),
                    ])
            }
            return .reply([])
        case ("org.bluez.Adapter1", "StopDiscovery"):
            return .reply([])
        case ("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement"):
            guard let sender = call.sender, let path = call.body.first?.stringValue else {
                return .error(name: "org.bluez.Error.InvalidArguments", message: "no path")
            }
            // bluetoothd reads the properties after the call; an answer first keeps the fake's bus thread free.
            Task {
                let reply = try? await connection.call(
                    DBusMethod(
                        destination: sender, path: path, interface: "org.freedesktop.DBus.Properties",
                        member: "GetAll"), [.string("org.bluez.LEAdvertisement1")])
                log.advertisement.withLock { $0 = reply?.body.first?.dictionaryValue }
            }
            return .reply([])
        case ("org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement"):
            return .reply([])
        default:
            return .unknownMethod(call)
        }
    }
    return (connection, adapter)
}

@Suite("bluetoothd backend against a fake bluetoothd on a private bus", .timeLimit(.minutes(1)))
struct BlueZBusRadioTests {
    @Test("the advertiser registers an advertisement whose properties bluetoothd reads back")
    func advertises() async throws {
        let bus = try await PrivateBusDaemon()
        let log = FakeBlueZLog()
        let (fake, adapterObject) = try await startFakeBlueZ(on: bus, log: log)
        let advertiser = try await BlueZBusRadio.advertiser(adapter: 0, bus: .address(bus.address))
        try await advertiser.startAdvertising(try AdvertisingData.caBLE(advert: advert).bytes)
        var read: [String: DBusValue]? = nil
        for _ in 0..<200 where read == nil {
            try await Task.sleep(for: .milliseconds(10))
            read = log.advertisement.withLock { $0 }
        }
        let properties = try #require(read, "the fake bluetoothd could not read the advertisement")
        #expect(properties["Type"] == .string("broadcast"))
        #expect(properties["ServiceData"]?.dictionaryValue == [fff9: .bytes(advert)])
        await advertiser.close()
        #expect(
            log.recorded == [
                "org.freedesktop.DBus.Properties.Get", "org.bluez.LEAdvertisingManager1.RegisterAdvertisement",
                "org.bluez.LEAdvertisingManager1.UnregisterAdvertisement",
            ])
        await adapterObject.unexport()
        await fake.close()
    }

    @Test("the scanner turns on duplicate reports and hands over the device's service data")
    func scans() async throws {
        let bus = try await PrivateBusDaemon()
        let log = FakeBlueZLog()
        let (fake, adapterObject) = try await startFakeBlueZ(on: bus, log: log)
        let scanner = try await BlueZBusRadio.scanner(adapter: 0, bus: .address(bus.address))
        let (adverts, seen) = AsyncStream<[UInt8]>.makeStream()
        try await scanner.startScanning { seen.yield($0) }
        var iterator = adverts.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(try AdvertisingData(bytes: first).caBLEAdvert == advert)
        await scanner.close()
        let recorded = log.recorded
        #expect(log.discoveryFilter.withLock { $0 } == ["Transport": .string("le"), "DuplicateData": .bool(true)])
        #expect(recorded.suffix(2) == ["org.bluez.Adapter1.StartDiscovery", "org.bluez.Adapter1.StopDiscovery"])
        await adapterObject.unexport()
        await fake.close()
    }

    @Test("no bluetoothd, an adapter that is off, or none: unavailable, with what to do")
    func unavailable() async throws {
        let bus = try await PrivateBusDaemon()
        await #expect(throws: ProximityError.self) {
            _ = try await BlueZBusRadio.scanner(adapter: 0, bus: .address(bus.address))
        }
        do {
            _ = try await BlueZBusRadio.advertiser(adapter: 0, bus: .address(bus.address))
            Issue.record("an advertiser without bluetoothd")
        } catch {
            #expect(error.description.hasPrefix("bluetoothd is not running"))
        }
        let log = FakeBlueZLog()
        let (fake, adapterObject) = try await startFakeBlueZ(on: bus, powered: false, log: log)
        do {
            _ = try await BlueZBusRadio.scanner(adapter: 0, bus: .address(bus.address))
            Issue.record("a scanner on an adapter that is off")
        } catch {
            #expect(error.description.hasPrefix("Bluetooth adapter hci0 is off"))
        }
        do {
            _ = try await BlueZBusRadio.scanner(adapter: 1, bus: .address(bus.address))
            Issue.record("a scanner on an adapter that does not exist")
        } catch {
            #expect(error.description.hasPrefix("no Bluetooth adapter hci1"))
        }
        await adapterObject.unexport()
        await fake.close()
    }
}
