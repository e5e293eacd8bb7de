import DBus
import Proximity

/// Opens the bluetoothd backend for `--ble hci[:N]`: Bluetooth through BlueZ's D-Bus API, as Chromium and
/// libwebauthn use it. The advertiser registers an `org.bluez.LEAdvertisement1` object with the adapter's
/// `LEAdvertisingManager1`; the scanner runs the adapter's discovery with duplicate reports on and reads the devices'
/// service data from bluetoothd's signals. Neither needs a capability: bluetoothd's D-Bus policy lets every local
/// user advertise and discover, where a raw HCI socket (`--ble hci-raw`, `BlueZRadio`) needs CAP_NET_RAW.
public enum BlueZBusRadio {
    /// How long bluetoothd may take to answer a call.
    static let callTimeout: Duration = .seconds(10)

    /// An advertiser on adapter `hciN`, asking bluetoothd for adverts every `interval` (it may choose otherwise).
    /// Throws `ProximityError.unavailable` when the bus or bluetoothd cannot be reached, the adapter does not exist
    /// or is off; the message says what to do.
    public static func advertiser(
        adapter: Int, interval: Duration = .milliseconds(100), bus: DBusBus = .system
    ) async throws(ProximityError) -> any ProximityAdvertiser {
        BlueZBusAdvertiser(
            connection: try await poweredAdapter(adapter, bus: bus), adapter: adapter, interval: interval)
    }

    /// A scanner on adapter `hciN`; it throws as `advertiser(adapter:interval:bus:)` does.
    public static func scanner(adapter: Int, bus: DBusBus = .system) async throws(ProximityError)
        -> any ProximityScanner
    {
        BlueZBusScanner(connection: try await poweredAdapter(adapter, bus: bus), adapter: adapter)
    }

    /// A connection to `bus` on which bluetoothd has adapter `hciN`, powered.
    static func poweredAdapter(_ adapter: Int, bus: DBusBus) async throws(ProximityError) -> DBusConnection {
        guard (0...0xFFFE).contains(adapter) else {
            throw BlueZBusTranslation.unavailable(
                .remote(name: "org.freedesktop.DBus.Error.UnknownObject", message: ""), adapter: adapter)
        }
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.open(bus)
        } catch {
            throw BlueZBusTranslation.unavailable(error, adapter: adapter)
        }
        do {
            var reply = try await connection.call(
                properties(adapter, "Get"),
                [.string(BlueZBusTranslation.adapterInterface), .string("Powered")], timeout: callTimeout
            ).arguments
            guard try reply.next(DBusValue.self).boolValue == true else {
                await connection.close()
                throw ProximityError.unavailable(
                    "Bluetooth adapter hci\(adapter) is off: `bluetoothctl power on` (or `rfkill unblock bluetooth`)")
            }
        } catch let error as ProximityError {
            throw error
        } catch {
            await connection.close()
            throw BlueZBusTranslation.unavailable(error as? DBusError ?? .unexpectedReply("\(error)"), adapter: adapter)
        }
        return connection
    }

    static func properties(_ adapter: Int, _ member: String) -> DBusMethod {
        DBusMethod(
            destination: BlueZBusTranslation.service, path: BlueZBusTranslation.adapterPath(adapter),
            interface: "org.freedesktop.DBus.Properties", member: member)
    }

    static func adapterMethod(_ adapter: Int, _ interface: String, _ member: String) -> DBusMethod {
        DBusMethod(
            destination: BlueZBusTranslation.service, path: BlueZBusTranslation.adapterPath(adapter),
            interface: interface, member: member)
    }
}

/// Advertises through bluetoothd: one `LEAdvertisement1` object, registered while advertising.
actor BlueZBusAdvertiser: ProximityAdvertiser {
    /// The advertisement's path on this process's own connection.
    static let objectPath = "/org/passkey/advertisement0"

    private let connection: DBusConnection
    private let adapter: Int
    private let interval: Duration
    private var exported: DBusExportedObject?
    private var closed = false

    init(connection: DBusConnection, adapter: Int, interval: Duration) {
        self.connection = connection
        self.adapter = adapter
        self.interval = interval
    }

    func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError) {
        guard !closed else { throw .failed("the Bluetooth advertiser is closed") }
        guard advertisingData.count <= 31 else { throw .advertisingDataTooLong(advertisingData.count) }
        let properties = try BlueZBusTranslation.advertisementProperties(advertisingData, interval: interval)
        await stopAdvertising()
        var object: DBusExportedObject? = nil
        do {
            object = try await connection.export(path: Self.objectPath) { call in
                if let answer = DBusAnswer.properties(call, [BlueZBusTranslation.advertisementInterface: properties]) {
                    return answer
                }
                if call.interface == BlueZBusTranslation.advertisementInterface && call.member == "Release" {
                    return .reply([])
                }
                return .unknownMethod(call)
            }
            try await connection.callIgnoringReply(
                BlueZBusRadio.adapterMethod(
                    adapter, BlueZBusTranslation.advertisingManagerInterface, "RegisterAdvertisement"),
                [.objectPath(Self.objectPath), .variantDictionary([:])], timeout: BlueZBusRadio.callTimeout)
        } catch {
            await object?.unexport()
            throw BlueZBusTranslation.failed("advertise", error, adapter: adapter)
        }
        exported = object
    }

    func stopAdvertising() async {
        guard let object = exported else { return }
        exported = nil
        try? await connection.callIgnoringReply(
            BlueZBusRadio.adapterMethod(
                adapter, BlueZBusTranslation.advertisingManagerInterface, "UnregisterAdvertisement"),
            [.objectPath(Self.objectPath)], timeout: BlueZBusRadio.callTimeout)
        await object.unexport()
    }

    func close() async {
        await stopAdvertising()
        guard !closed else { return }
        closed = true
        await connection.close()
    }
}

/// Scans through bluetoothd: LE discovery with duplicate reports on, the devices' service data read from
/// `InterfacesAdded` (a device seen for the first time) and `PropertiesChanged` (seen again).
actor BlueZBusScanner: ProximityScanner {
    private let connection: DBusConnection
    private let adapter: Int
    private var listening: Task<Void, Never>?
    private var delivery: CallbackBox?
    private var closed = false

    init(connection: DBusConnection, adapter: Int) {
        self.connection = connection
        self.adapter = adapter
    }

    func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError) {
        guard !closed else { throw .failed("the Bluetooth scanner is closed") }
        await stopScanning()
        let adapterPath = BlueZBusTranslation.adapterPath(adapter)
        let delivery = CallbackBox()
        delivery.set(onAdvert)
        do {
            // Subscribed before discovery starts, so that no report is missed.
            let added = try await connection.signals(
                matching: DBusMatchRule(
                    sender: BlueZBusTranslation.service, interface: "org.freedesktop.DBus.ObjectManager",
                    member: "InterfacesAdded"))
            let changed = try await connection.signals(
                matching: DBusMatchRule(
                    sender: BlueZBusTranslation.service, interface: "org.freedesktop.DBus.Properties",
                    member: "PropertiesChanged", argument0: BlueZBusTranslation.deviceInterface))
            listening = Task {
                await withTaskGroup(of: Void.self) { group in
                    for stream in [added, changed] {
                        group.addTask {
                            for await signal in stream {
                                if let data = BlueZBusTranslation.advertisingData(
                                    from: signal, adapterPath: adapterPath)
                                {
                                    delivery.deliver(data)
                                }
                            }
                        }
                    }
                }
            }
            self.delivery = delivery
            try await connection.callIgnoringReply(
                BlueZBusRadio.adapterMethod(adapter, BlueZBusTranslation.adapterInterface, "SetDiscoveryFilter"),
                [.variantDictionary(["Transport": .string("le"), "DuplicateData": .bool(true)])],
                timeout: BlueZBusRadio.callTimeout)
            try await connection.callIgnoringReply(
                BlueZBusRadio.adapterMethod(adapter, BlueZBusTranslation.adapterInterface, "StartDiscovery"),
                timeout: BlueZBusRadio.callTimeout)
        } catch {
            await stopScanning()
            throw BlueZBusTranslation.failed("scan", error, adapter: adapter)
        }
    }

    func stopScanning() async {
        guard let delivery else { return }
        delivery.set(nil)
        self.delivery = nil
        listening?.cancel()
        listening = nil
        try? await connection.callIgnoringReply(
            BlueZBusRadio.adapterMethod(adapter, BlueZBusTranslation.adapterInterface, "StopDiscovery"),
            timeout: BlueZBusRadio.callTimeout)
    }

    func close() async {
        await stopScanning()
        guard !closed else { return }
        closed = true
        await connection.close()
    }
}
