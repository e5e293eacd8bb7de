import Hybrid
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import Proximity
@testable import ProximityIO

struct SimulatedRadioTests {
    /// The one real-socket path: an advertiser and a scanner over loopback UDP, the scanner seeing the exact bytes.
    @Test(.timeLimit(.minutes(1)))
    func advertiserAndScannerMeetOverLoopback() async throws {
        let scanner = try await SimulatedRadio.scanner(host: "127.0.0.1", port: 0)
        let (adverts, sink) = AsyncStream.makeStream(of: [UInt8].self)
        try await scanner.startScanning { sink.yield($0) }
        let advertiser = try await SimulatedRadio.advertiser(
            host: "127.0.0.1", port: scanner.port, interval: .milliseconds(20))
        let data = try AdvertisingData.caBLE(advert: Array(0..<20)).bytes
        try await advertiser.startAdvertising(data)
        var received: [[UInt8]] = []
        for await advert in adverts {
            received.append(advert)
            if received.count == 3 { break }
        }
        #expect(received == [data, data, data])
        await advertiser.close()
        await scanner.close()
    }

    /// An advertiser on an `EmbeddedChannel`, whose clock the test moves.
    final class EmbeddedAdvertiser {
        let channel = EmbeddedChannel()
        let target = try! SocketAddress(ipAddress: "127.0.0.1", port: 47_250)
        let advertiser: SimulatedAdvertiser

        init(interval: Duration) throws {
            try channel.connect(to: target).wait()
            advertiser = SimulatedAdvertiser(channel: channel, target: target, interval: interval)
        }

        /// The datagrams sent so far, and to where.
        func sent() throws -> [[UInt8]] {
            var datagrams: [[UInt8]] = []
            while let envelope = try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
                #expect(envelope.remoteAddress == target)
                datagrams.append(Array(buffer: envelope.data))
            }
            return datagrams
        }

        func advance(_ duration: Duration) { channel.embeddedEventLoop.advanceTime(by: TimeAmount(duration)) }
    }

    @Test func theAdvertiserRepeatsEveryIntervalUntilStopped() async throws {
        let embedded = try EmbeddedAdvertiser(interval: .milliseconds(20))
        try await embedded.advertiser.startAdvertising([2, 0x01, 0x06])
        embedded.advance(.zero)
        #expect(try embedded.sent() == [[2, 0x01, 0x06]], "the first at once")
        embedded.advance(.milliseconds(19))
        #expect(try embedded.sent().isEmpty)
        embedded.advance(.milliseconds(81))
        #expect(try embedded.sent().count == 5, "one every 20 ms")
        await embedded.advertiser.stopAdvertising()
        embedded.advance(.seconds(10))
        #expect(try embedded.sent().isEmpty, "nothing after stopAdvertising")
    }

    @Test func startingAgainReplacesTheAdvertisement() async throws {
        let embedded = try EmbeddedAdvertiser(interval: .milliseconds(100))
        try await embedded.advertiser.startAdvertising([1])
        embedded.advance(.milliseconds(150))
        try await embedded.advertiser.startAdvertising([2])
        embedded.advance(.milliseconds(250))
        #expect(try embedded.sent() == [[1], [1], [2], [2], [2]])
        await embedded.advertiser.close()
        embedded.advance(.seconds(10))
        #expect(try embedded.sent().isEmpty)
    }

    @Test func zeroIntervalSendsOnce() async throws {
        let embedded = try EmbeddedAdvertiser(interval: .zero)
        try await embedded.advertiser.startAdvertising([2, 0x01, 0x06])
        embedded.advance(.seconds(10))
        #expect(try embedded.sent() == [[2, 0x01, 0x06]])
    }

    @Test func oversizeAdvertisingDataIsRefusedAndSendsNothing() async throws {
        let embedded = try EmbeddedAdvertiser(interval: .milliseconds(20))
        await #expect(throws: ProximityError.advertisingDataTooLong(32)) {
            try await embedded.advertiser.startAdvertising(Array(repeating: 0, count: 32))
        }
        embedded.advance(.seconds(1))
        #expect(try embedded.sent().isEmpty)
    }

    @Test func noCallbackAfterStopScanning() async throws {
        let callback = CallbackBox()
        let channel = EmbeddedChannel(handler: AdvertDatagramHandler(callback: callback))
        let scanner = SimulatedScanner(channel: channel, callback: callback)
        let seen = Mutex<[[UInt8]]>([])
        try await scanner.startScanning { bytes in seen.withLock { $0.append(bytes) } }
        let sender = try SocketAddress(ipAddress: "127.0.0.1", port: 40_000)
        try channel.writeInbound(AddressedEnvelope(remoteAddress: sender, data: ByteBuffer(bytes: [1])))
        await scanner.stopScanning()
        try channel.writeInbound(AddressedEnvelope(remoteAddress: sender, data: ByteBuffer(bytes: [2])))
        #expect(seen.withLock { $0 } == [[1]])
        try await scanner.startScanning { bytes in seen.withLock { $0.append(bytes) } }
        try channel.writeInbound(AddressedEnvelope(remoteAddress: sender, data: ByteBuffer(bytes: [3])))
        #expect(seen.withLock { $0 } == [[1], [3]])
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
        #expect(ProximityMode(argument: "hci-raw") == .hciRaw(adapter: 0))
        #expect(ProximityMode(argument: "hci-raw:1") == .hciRaw(adapter: 1))
        #expect(ProximityMode(argument: "hci-raw:1")?.description == "hci-raw:1")
        #expect(ProximityMode(argument: "hci:3")?.description == "hci:3")
        #expect(ProximityMode(argument: "sim") == .simulated(host: "127.0.0.1", port: 47250))
        #expect(ProximityMode(argument: "sim:10.0.0.1:9") == .simulated(host: "10.0.0.1", port: 9))
        #expect(ProximityMode(argument: "sim:[::1]:9") == .simulated(host: "::1", port: 9))
        #expect(ProximityMode(argument: "sim:[::1]:9")?.description == "sim:[::1]:9")
        for bad in [
            "", "hci:", "hci:x", "hci:-1", "sim:", "sim:host", "sim::9", "sim:h:70000", "bt", "HCI", "hci-raw:",
            "hci-raw:x", "hci-raw1", "hci:raw",
        ] {
            #expect(ProximityMode(argument: bad) == nil, "\(bad)")
        }
    }
}
