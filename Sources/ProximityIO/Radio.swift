import Proximity

/// Opens the radio a `--ble` mode names.
public enum Radio {
    /// An advertiser: bluetoothd, a raw HCI socket, or the simulated radio, repeating every `interval`.
    public static func advertiser(
        for mode: ProximityMode, interval: Duration = SimulatedRadio.defaultInterval
    ) async throws(ProximityError) -> any ProximityAdvertiser {
        switch mode {
        case .hci(let adapter): try await BlueZBusRadio.advertiser(adapter: adapter, interval: interval)
        case .hciRaw(let adapter): try BlueZRadio.advertiser(adapter: adapter)
        case .simulated(let host, let port):
            try await SimulatedRadio.advertiser(host: host, port: port, interval: interval)
        }
    }

    /// A scanner: bluetoothd, a raw HCI socket, or the simulated radio's listening port.
    public static func scanner(for mode: ProximityMode) async throws(ProximityError) -> any ProximityScanner {
        switch mode {
        case .hci(let adapter): try await BlueZBusRadio.scanner(adapter: adapter)
        case .hciRaw(let adapter): try BlueZRadio.scanner(adapter: adapter)
        case .simulated(let host, let port): try await SimulatedRadio.scanner(host: host, port: port)
        }
    }

    /// Whether `mode`'s radio can scan now: it opens (bluetoothd's adapter powered, a raw HCI socket, the simulated
    /// radio's port) and is closed again at once. What `getClientCapabilities()` calls `hybridTransport`.
    public static func isUsable(_ mode: ProximityMode) async -> Bool {
        do {
            let scanner = try await scanner(for: mode)
            await scanner.close()
            return true
        } catch {
            return false
        }
    }
}
