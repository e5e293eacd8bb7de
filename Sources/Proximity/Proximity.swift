/// Bluetooth LE proximity for hybrid sign-in, behind one small protocol: the authenticator advertises the
/// encrypted caBLE service data, the client scans for it. This module is the protocol, the `--ble` modes and the HCI
/// codecs (`HCI/`), all pure; the radios live in `ProximityIO`: bluetoothd's D-Bus API (`BlueZBus/`, `--ble hci[:N]`),
/// BlueZ's raw HCI socket (`BlueZ/`, `--ble hci-raw[:N]`) and a simulated radio over UDP (`Simulated/`, `--ble sim[:HOST:PORT]`), and `Radio` opens the one a `--ble` mode
/// names (Docs/Proximity.md).
///
/// Both carry LE *advertising data*: the AD structures a controller puts in an advertising PDU, at most 31 bytes.
/// Callers build and parse it with `Hybrid.AdvertisingData`.

/// Why a radio could not be used.
public enum ProximityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The radio does not exist or this process may not use it; the text says which, and what to do.
    case unavailable(String)
    /// The advertising data is longer than a legacy advertising PDU carries (31 bytes).
    case advertisingDataTooLong(Int)
    /// The radio failed while in use (a controller error, a socket error).
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let reason): reason
        case .advertisingDataTooLong(let count):
            "advertising data has \(count) bytes; a legacy advertisement carries at most 31"
        case .failed(let reason): "Bluetooth radio failed: \(reason)"
        }
    }
}

/// Sends one advertisement over and over until told to stop.
public protocol ProximityAdvertiser: Sendable {
    /// Starts sending `advertisingData` (AD structures, at most 31 bytes), replacing whatever was being sent.
    func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError)
    /// Stops sending. Stopping twice, or before starting, does nothing.
    func stopAdvertising() async
    /// Releases the radio. The advertiser is not used again.
    func close() async
}

/// Listens for advertisements.
public protocol ProximityScanner: Sendable {
    /// Starts listening and passes the advertising data of every advertisement seen to `onAdvert`, duplicates
    /// included, from any thread, until `stopScanning()`.
    func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError)
    /// Stops listening: `onAdvert` is not called after this returns.
    func stopScanning() async
    /// Releases the radio. The scanner is not used again.
    func close() async
}

/// Which radio to use, as written after `--ble`.
public enum ProximityMode: Hashable, Sendable, CustomStringConvertible {
    /// A BlueZ adapter through bluetoothd's D-Bus API (`org.bluez`): `hci` (adapter 0) or `hci:N`. Needs no
    /// capability, only a bluetoothd that manages the adapter.
    case hci(adapter: Int)
    /// A BlueZ controller through a raw HCI socket, beside or without bluetoothd: `hci-raw` (adapter 0) or
    /// `hci-raw:N`. Needs CAP_NET_RAW and CAP_NET_ADMIN.
    case hciRaw(adapter: Int)
    /// The simulated radio: `sim` (127.0.0.1:47250) or `sim:HOST:PORT`.
    case simulated(host: String, port: Int)

    /// The simulated radio's default UDP address.
    public static let defaultSimulatedHost = "127.0.0.1"
    public static let defaultSimulatedPort = 47250

    /// Parses `hci`, `hci:N`, `hci-raw`, `hci-raw:N`, `sim` or `sim:HOST:PORT`; `nil` for anything else.
    public init?(argument: String) {
        if let adapter = Self.adapter(argument, prefix: "hci") {
            self = .hci(adapter: adapter)
        } else if let adapter = Self.adapter(argument, prefix: "hci-raw") {
            self = .hciRaw(adapter: adapter)
        } else if argument == "sim" {
            self = .simulated(host: Self.defaultSimulatedHost, port: Self.defaultSimulatedPort)
        } else if argument.hasPrefix("sim:") {
            let address = argument.dropFirst(4)
            guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
                let port = Int(address[address.index(after: colon)...]), (0...65535).contains(port)
            else { return nil }
            var host = String(address[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            self = .simulated(host: host, port: port)
        } else {
            return nil
        }
    }

    /// The adapter of `PREFIX` (0) or `PREFIX:N`.
    private static func adapter(_ argument: String, prefix: String) -> Int? {
        if argument == prefix { return 0 }
        guard argument.hasPrefix(prefix + ":"), let adapter = Int(argument.dropFirst(prefix.count + 1)),
            (0...0xFFFF).contains(adapter)
        else { return nil }
        return adapter
    }

    public var description: String {
        switch self {
        case .hci(let adapter): "hci:\(adapter)"
        case .hciRaw(let adapter): "hci-raw:\(adapter)"
        case .simulated(let host, let port): host.contains(":") ? "sim:[\(host)]:\(port)" : "sim:\(host):\(port)"
        }
    }
}
