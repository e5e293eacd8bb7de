import Hybrid
import Proximity
import Synchronization
import Testing

struct SimulatedRadioTests {
    @Test func advertiserRepeatsUntilStoppedAndScannerSeesTheExactBytes() async throws {
        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        let seen = Mutex<[[UInt8]]>([])
        try await scanner.startScanning { bytes in seen.withLock { $0.append(bytes) } }
        let advertiser = try await SimulatedRadio.advertiser(
            host: "127.0.0.1", port: scanner.port, interval: .milliseconds(20))
        let data = try AdvertisingData.caBLE(advert: Array(0..<20)).bytes
        try await advertiser.startAdvertising(data)
        try await Task.sleep(for: .milliseconds(300))
        await advertiser.stopAdvertising()
        try await Task.sleep(for: .milliseconds(100))
        let countAtStop = seen.withLock { $0.count }
        try await Task.sleep(for: .milliseconds(200))
        #expect(countAtStop >= 3, "an advert every 20 ms for 300 ms")
        #expect(seen.withLock { $0.count } == countAtStop, "nothing after stopAdvertising")
        #expect(seen.withLock { $0.allSatisfy { $0 == data } })
        await advertiser.close()
        await scanner.close()
    }

    @Test func zeroIntervalSendsOnce() async throws {
        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        let seen = Mutex(0)
        try await scanner.startScanning { _ in seen.withLock { $0 += 1 } }
        let advertiser = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: scanner.port, interval: .zero)
        try await advertiser.startAdvertising([2, 0x01, 0x06])
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.withLock { $0 } == 1)
        await advertiser.close()
        await scanner.close()
    }

    @Test func noCallbackAfterStopScanningAndOversizeDatagramsAreDropped() async throws {
        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        let seen = Mutex<[[UInt8]]>([])
        try await scanner.startScanning { bytes in seen.withLock { $0.append(bytes) } }
        let advertiser = try await SimulatedRadio.advertiser(host: "127.0.0.1", port: scanner.port, interval: .zero)
        await #expect(throws: ProximityError.advertisingDataTooLong(32)) {
            try await advertiser.startAdvertising(Array(repeating: 0, count: 32))
        }
        try await advertiser.startAdvertising([1])
        try await Task.sleep(for: .milliseconds(100))
        await scanner.stopScanning()
        try await advertiser.startAdvertising([2])
        try await Task.sleep(for: .milliseconds(100))
        #expect(seen.withLock { $0 } == [[1]])
        await advertiser.close()
        await scanner.close()
    }

    @Test func secondScannerOnTheSamePortSaysSo() async throws {
        let first = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        do {
            _ = try await SimulatedRadio.scanner(host: "127.0.0.1", port: first.port)
            Issue.record("two scanners bound one port")
        } catch {
            #expect(error.description.contains("is in use"))
            #expect(error.description.contains("--ble sim:HOST:PORT"))
        }
        await first.close()
    }

    @Test func modeArgumentsParse() {
        #expect(ProximityMode(argument: "hci") == .hci(adapter: 0))
        #expect(ProximityMode(argument: "hci:2") == .hci(adapter: 2))
        #expect(ProximityMode(argument: "sim") == .simulated(host: "127.0.0.1", port: 47250))
        #expect(ProximityMode(argument: "sim:10.0.0.1:9") == .simulated(host: "10.0.0.1", port: 9))
        #expect(ProximityMode(argument: "sim:[::1]:9") == .simulated(host: "::1", port: 9))
        #expect(ProximityMode(argument: "sim:[::1]:9")?.description == "sim:[::1]:9")
        for bad in ["", "hci:", "hci:x", "hci:-1", "sim:", "sim:host", "sim::9", "sim:h:70000", "bt", "HCI"] {
            #expect(ProximityMode(argument: bad) == nil, "\(bad)")
        }
    }
}
