import DBus
import Hybrid
import Proximity

/// The pure half of the bluetoothd backend: advertising data to the properties of an `org.bluez.LEAdvertisement1`,
/// and bluetoothd's discovery signals back to advertising data, so that the layers above see the same bytes as from
/// the raw HCI backend.
enum BlueZBusTranslation {
    static let service = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let advertisementInterface = "org.bluez.LEAdvertisement1"
    static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"

    /// The adapter's object path: `/org/bluez/hciN`.
    static func adapterPath(_ adapter: Int) -> String { "/org/bluez/hci\(adapter)" }

    /// The properties of a non-connectable advertisement ("broadcast") carrying `advertisingData`'s 16-bit service
    /// UUID lists and service data, which is all a caBLE advert holds. BlueZ builds the AD structures from them
    /// (it may add Flags) and picks the interval; `interval` asks for one where BlueZ reads MinInterval and
    /// MaxInterval. Any other AD type cannot be expressed through this API and is refused.
    static func advertisementProperties(
        _ advertisingData: [UInt8], interval: Duration
    ) throws(ProximityError) -> [String: DBusValue] {
        let parsed: AdvertisingData
        do {
            parsed = try AdvertisingData(bytes: advertisingData)
        } catch {
            throw .failed("the advertising data is malformed: \(error)")
        }
        var uuids: [String] = []
        var serviceData: [String: DBusValue] = [:]
        for structure in parsed.structures {
            switch structure.type {
            case .completeServiceUUIDs16, .incompleteServiceUUIDs16:
                guard structure.data.count.isMultiple(of: 2) else {
                    throw .failed("a 16-bit service UUID list has an odd length (\(structure.data.count) bytes)")
                }
                for index in stride(from: 0, to: structure.data.count, by: 2) {
                    let value = UInt16(structure.data[index]) | UInt16(structure.data[index + 1]) << 8
                    uuids.append(ServiceUUID16(rawValue: value).uuidString)
                }
            case .serviceData16:
                guard let entry = structure.serviceData else {
                    throw .failed("service data of \(structure.data.count) bytes has no room for its UUID")
                }
                serviceData[entry.uuid.uuidString] = .bytes(entry.data)
            default:
                throw .failed(
                    "bluetoothd cannot send AD type 0x\(String(structure.type.rawValue, radix: 16)); use --ble hci-raw")
            }
        }
        let milliseconds =
            UInt32(clamping: interval.components.seconds * 1000)
            + UInt32(clamping: interval.components.attoseconds / 1_000_000_000_000_000)
        var properties: [String: DBusValue] = [
            "Type": .string("broadcast"),
            "MinInterval": .uint32(milliseconds),
            "MaxInterval": .uint32(milliseconds),
        ]
        if !uuids.isEmpty { properties["ServiceUUIDs"] = .strings(uuids) }
        if !serviceData.isEmpty { properties["ServiceData"] = .variantDictionary(serviceData) }
        return properties
    }

    /// The advertising data an `InterfacesAdded` or `PropertiesChanged` signal of bluetoothd reports for a device
    /// under `adapterPath`: one service data structure per 16-bit service UUID in its `ServiceData`, in UUID order.
    /// Nil when the signal is of another kind, for another adapter, or carries no such service data.
    static func advertisingData(from signal: DBusMessage, adapterPath: String) -> [UInt8]? {
        var arguments = signal.arguments
        let properties: [String: DBusValue]
        switch (signal.interface, signal.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard let path = try? arguments.next(String.self), path.hasPrefix(adapterPath + "/"),
                let interfaces = try? arguments.next([String: DBusValue].self),
                let device = interfaces[deviceInterface]?.dictionaryValue
            else { return nil }
            properties = device
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard let path = signal.path, path.hasPrefix(adapterPath + "/"),
                (try? arguments.next(String.self)) == deviceInterface,
                let changed = try? arguments.next([String: DBusValue].self)
            else { return nil }
            properties = changed
        default:
            return nil
        }
        guard let serviceData = properties["ServiceData"]?.dictionaryValue else { return nil }
        var structures: [ADStructure] = []
        for (key, value) in serviceData.sorted(by: { $0.key < $1.key }) {
            guard let uuid = ServiceUUID16(uuidString: key), let data = value.bytesValue,
                let structure = try? ADStructure(serviceUUID: uuid, serviceData: data)
            else { continue }
            structures.append(structure)
        }
        return structures.isEmpty ? nil : AdvertisingData(structures: structures).bytes
    }

    /// What went wrong reaching adapter `adapter` through bluetoothd, in a person's terms with the next step.
    static func unavailable(_ error: DBusError, adapter: Int) -> ProximityError {
        let name = "hci\(adapter)"
        let alternatives = "or --ble hci-raw:\(adapter) (raw HCI, needs CAP_NET_RAW) or --ble sim"
        switch error {
        case .noBus, .connection:
            return .unavailable(
                "cannot reach bluetoothd: the D-Bus system bus is not running (\(error)); \(alternatives)")
        case .remote(let remote, _)
        where remote == "org.freedesktop.DBus.Error.ServiceUnknown"
            || remote == "org.freedesktop.DBus.Error.NameHasNoOwner":
            return .unavailable("bluetoothd is not running (systemctl start bluetooth); \(alternatives)")
        case .remote(let remote, _)
        where remote == "org.freedesktop.DBus.Error.UnknownObject"
            || remote == "org.freedesktop.DBus.Error.UnknownMethod"
            || remote == "org.freedesktop.DBus.Error.InvalidArgs":
            return .unavailable("no Bluetooth adapter \(name) (`bluetoothctl list` shows them); \(alternatives)")
        case .remote(let remote, let message) where remote == "org.freedesktop.DBus.Error.AccessDenied":
            return .unavailable("bluetoothd refused this user (\(message)); \(alternatives)")
        case .timedOut:
            return .unavailable("bluetoothd did not answer within 10 s; \(alternatives)")
        default:
            return .failed("bluetoothd on \(name): \(error)")
        }
    }

    /// A failed call of bluetoothd once the adapter is known, as `ProximityError.failed`.
    static func failed(_ what: String, _ error: any Error, adapter: Int) -> ProximityError {
        switch error {
        case DBusError.remote(_, let message) where !message.isEmpty:
            .failed("bluetoothd refused to \(what) on hci\(adapter): \(message)")
        case DBusError.timedOut:
            .failed("bluetoothd did not \(what) on hci\(adapter) within 10 s")
        default:
            .failed("could not \(what) on hci\(adapter): \(error)")
        }
    }
}
