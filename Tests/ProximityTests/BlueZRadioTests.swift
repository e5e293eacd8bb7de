import Glibc
import TestSupport
import Testing

@testable import Proximity
@testable import ProximityIO

/// The advertiser and scanner against a fake HCI socket: exact command bytes out, event bytes in.
struct BlueZRadioTests {
    static let advert = cableAdvert((1...20).map { UInt8($0) })
    /// The advertisers below draw their address from `SeededRandom(seed: addressSeed)`: C0 | 46 random bits, sent
    /// least significant byte first.
    static let addressSeed: UInt64 = 0xB1E2_0003
    static let address = bytes("AF DC C3 B9 86 F9")
    static let advertiseCommands = [
        bytes("01 0A 20 01 00"),
        bytes("01 05 20 06") + address,
        bytes("01 06 20 0F A0 00 A0 00 03 01 00 00 00 00 00 00 00 07 00"),
        bytes("01 08 20 20 18") + advert + [UInt8](repeating: 0, count: 7),
        bytes("01 0A 20 01 01"),
    ]
    static let scanCommands = [
        bytes("01 0C 20 02 00 00"),
        bytes("01 0B 20 07 00 10 00 10 00 00 00"),
        bytes("01 0C 20 02 01 00"),
    ]

    static func fast() -> BlueZOptions {
        var options = BlueZOptions()
        options.commandTimeout = .milliseconds(100)
        return options
    }

    static func advertiser(_ socket: FakeHCISocket, options: BlueZOptions = fast()) throws -> BlueZAdvertiser {
        var random = SeededRandom(seed: addressSeed)
        return try BlueZAdvertiser(adapter: 0, options: options, randomNumbers: &random) { _ throws(HCISocketError) in
            socket
        }
    }

    static func scanner(_ socket: FakeHCISocket) throws -> BlueZScanner {
        try BlueZScanner(adapter: 0, options: fast()) { _ throws(HCISocketError) in socket }
    }

    // MARK: Advertising

    @Test func advertiseSendsDisableRandomAddressParametersDataEnable() async throws {
        let socket = FakeHCISocket()
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        #expect(socket.written == Self.advertiseCommands)

        await advertiser.stopAdvertising()
        #expect(socket.written == Self.advertiseCommands + [bytes("01 0A 20 01 00")])
        await advertiser.stopAdvertising()  // twice: nothing more
        #expect(socket.written.count == Self.advertiseCommands.count + 1)

        await advertiser.close()
        #expect(socket.isClosed)
        await #expect(throws: ProximityError.failed("the advertiser is closed")) {
            try await advertiser.startAdvertising(Self.advert)
        }
    }

    @Test func stopBeforeStartAndCloseWhileAdvertising() async throws {
        let socket = FakeHCISocket()
        let advertiser = try Self.advertiser(socket)
        await advertiser.stopAdvertising()
        #expect(socket.written == [])
        try await advertiser.startAdvertising([0x02, 0x01, 0x06])
        await advertiser.close()  // restores the controller before closing
        #expect(socket.written.last == bytes("01 0A 20 01 00"))
        #expect(socket.written.count == Self.advertiseCommands.count + 1)
        #expect(socket.isClosed)
    }

    @Test func restartReplacesTheData() async throws {
        let socket = FakeHCISocket()
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        try await advertiser.startAdvertising([0x02, 0x01, 0x06])
        let second = Array(socket.written[Self.advertiseCommands.count...])
        #expect(second.count == Self.advertiseCommands.count)
        #expect(second[0] == bytes("01 0A 20 01 00"))
        #expect(second[1] == Self.advertiseCommands[1], "the same address for the advertiser's whole life")
        #expect(second[3] == bytes("01 08 20 20 03 02 01 06") + [UInt8](repeating: 0, count: 28))
    }

    @Test func customIntervalIsSent() async throws {
        var options = Self.fast()
        options.advertisingInterval = 0x0640  // 1 s
        let socket = FakeHCISocket()
        try await Self.advertiser(socket, options: options).startAdvertising(Self.advert)
        #expect(socket.written[2] == bytes("01 06 20 0F 40 06 40 06 03 01 00 00 00 00 00 00 00 07 00"))
    }

    @Test func tooLongDataSendsNothing() async throws {
        let socket = FakeHCISocket()
        await #expect(throws: ProximityError.advertisingDataTooLong(32)) {
            try await Self.advertiser(socket).startAdvertising([UInt8](repeating: 0, count: 32))
        }
        #expect(socket.written == [])
    }

    @Test func commandDisallowedOnTheFirstDisableIsIgnored() async throws {
        let socket = FakeHCISocket { packet in
            packet == bytes("01 0A 20 01 00")
                ? [commandComplete(0x200A, status: 0x0C)] : [commandComplete(opcode(of: packet), status: 0)]
        }
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        #expect(socket.written == Self.advertiseCommands)
        await advertiser.close()
    }

    @Test func controllerErrorStatusIsReported() async throws {
        let socket = FakeHCISocket { packet in
            [commandComplete(opcode(of: packet), status: opcode(of: packet) == 0x2008 ? 0x12 : 0x00)]
        }
        let advertiser = try Self.advertiser(socket)
        await #expect(
            throws: ProximityError.failed(
                "controller refused LE Set Advertising Data (status 0x12: invalid parameters)")
        ) { try await advertiser.startAdvertising(Self.advert) }
        #expect(socket.written == Array(Self.advertiseCommands[..<4]))  // not enabled after the failure
        await advertiser.stopAdvertising()  // nothing was enabled: nothing to disable
        #expect(socket.written.count == 4)
    }

    @Test func commandStatusErrorIsReported() async throws {
        let socket = FakeHCISocket { packet in
            opcode(of: packet) == 0x2006
                ? [commandStatus(0x2006, status: 0x01)] : [commandComplete(opcode(of: packet), status: 0)]
        }
        await #expect(
            throws: ProximityError.failed(
                "controller refused LE Set Advertising Parameters (status 0x01: unknown HCI command)")
        ) { try await Self.advertiser(socket).startAdvertising(Self.advert) }
    }

    @Test func disallowedIsAnErrorOutsideTheFirstDisable() async throws {
        let socket = FakeHCISocket { packet in
            [commandComplete(opcode(of: packet), status: packet == bytes("01 0A 20 01 01") ? 0x0C : 0)]
        }
        await #expect(
            throws: ProximityError.failed(
                "controller refused LE Set Advertising Enable (status 0x0C: command disallowed)")
        ) { try await Self.advertiser(socket).startAdvertising(Self.advert) }
    }

    /// Events that are not the answer (another command's, an advert, garbage) are skipped while waiting.
    @Test func unrelatedEventsAreSkipped() async throws {
        let socket = FakeHCISocket { packet in
            [
                commandComplete(0x0C03, status: 0x12), commandStatus(0x2009, status: 0x0C), bytes("04 0E 09 01"),
                advertisingReportEvent([ReportFields(data: [1])]), bytes("04 0E 03 01 00 00"),
                commandComplete(opcode(of: packet), status: 0),
            ]
        }
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        #expect(socket.written == Self.advertiseCommands)
        await advertiser.close()
    }

    @Test func answerWithoutStatusIsAnError() async throws {
        let socket = FakeHCISocket { packet in [bytes("04 0E 03 01") + packet[1...2]] }
        await #expect(
            throws: ProximityError.failed("controller hci0 answered LE Set Advertising Enable without a status")
        ) {
            try await Self.advertiser(socket).startAdvertising(Self.advert)
        }
    }

    @Test func silentControllerTimesOut() async throws {
        let socket = FakeHCISocket { _ in [advertisingReportEvent([ReportFields(data: [1])])] }
        let start = ContinuousClock.now
        await #expect(
            throws: ProximityError.failed("controller hci0 did not answer LE Set Advertising Enable within 0.1 seconds")
        ) { try await Self.advertiser(socket).startAdvertising(Self.advert) }
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        #expect(socket.written.count == 1)
    }

    // MARK: The advertiser's address

    /// Each advertiser draws its own static random address: the two most significant bits set, the other 46 neither
    /// all 0 nor all 1, sent before the parameters, which name it (own address type 1).
    @Test func eachAdvertiserSendsItsOwnStaticRandomAddress() async throws {
        var addresses: [[UInt8]] = []
        for _ in 0..<3 {
            let socket = FakeHCISocket()
            let advertiser = try BlueZAdvertiser(adapter: 0, options: Self.fast()) { _ throws(HCISocketError) in socket
            }
            try await advertiser.startAdvertising(Self.advert)
            await advertiser.close()
            let written = socket.written
            try #require(written.count == Self.advertiseCommands.count + 1)
            #expect(Array(written[1][..<4]) == bytes("01 05 20 06"))
            let address = Array(written[1][4...])
            try #require(address.count == 6)
            #expect(address[5] & 0xC0 == 0xC0, "static: the most significant bits are 11")
            let random = address.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            #expect(random & StaticRandomAddress.randomMask != 0)
            #expect(random & StaticRandomAddress.randomMask != StaticRandomAddress.randomMask)
            #expect(address == advertiser.address.littleEndianBytes)
            #expect(written[2][9] == 0x01, "LE Set Advertising Parameters: own address type random")
            #expect(written[0] == Self.advertiseCommands[0])
            #expect(Array(written[3...]) == Array(Self.advertiseCommands[3...]) + [bytes("01 0A 20 01 00")])
            addresses.append(address)
        }
        #expect(Set(addresses).count == 3, "a fresh address per advertiser")
    }

    /// A controller that refuses the address (it scans for another program, say) fails the start: the advert is
    /// never sent from the public address instead.
    @Test func refusedRandomAddressFailsTheStart() async throws {
        let socket = FakeHCISocket { packet in
            [commandComplete(opcode(of: packet), status: opcode(of: packet) == 0x2005 ? 0x0C : 0)]
        }
        let advertiser = try Self.advertiser(socket)
        await #expect(
            throws: ProximityError.failed("controller refused LE Set Random Address (status 0x0C: command disallowed)")
        ) { try await advertiser.startAdvertising(Self.advert) }
        #expect(socket.written == Array(Self.advertiseCommands[..<2]))
        await advertiser.close()
        #expect(socket.written.count == 2, "nothing was enabled: nothing to disable")
    }

    // MARK: Scanning

    @Test func scanSendsDisableParametersEnableAndStopDisables() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        try await scanner.startScanning { _ in }
        #expect(socket.written == Self.scanCommands)
        await scanner.stopScanning()
        #expect(socket.written == Self.scanCommands + [bytes("01 0C 20 02 00 00")])
        await scanner.stopScanning()
        #expect(socket.written.count == 4)
        await scanner.close()
        #expect(socket.isClosed)
        await #expect(throws: ProximityError.failed("the scanner is closed")) {
            try await scanner.startScanning { _ in }
        }
    }

    /// The reader waits for the socket instead of polling it: an idle scan is one read that does not return until
    /// `stopScanning()` interrupts it.
    @Test func idleScanWaitsInOneRead() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let seen = Collected<[UInt8]>()
        try await scanner.startScanning { seen.append($0) }
        socket.inject(advertisingReportEvent([ReportFields(data: [1])]))
        #expect(try await seen.wait(for: 1) == [[1]])
        let readsWhenIdle = socket.reads
        try await Task.sleep(for: .milliseconds(300))
        // The reader may not yet have begun its next read when the count was taken; polling every 50 ms would be 6.
        #expect(socket.reads <= readsWhenIdle + 1, "no read returned in 300 ms without a packet")
        let start = ContinuousClock.now
        await scanner.stopScanning()
        // Only the interrupt ends that read: a stop that did not wake it would never return.
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(socket.written == Self.scanCommands + [bytes("01 0C 20 02 00 00")])
        await scanner.close()
    }

    @Test func scanErrorStatusIsReported() async throws {
        let socket = FakeHCISocket { packet in
            [commandComplete(opcode(of: packet), status: opcode(of: packet) == 0x200B ? 0x12 : 0)]
        }
        let scanner = try Self.scanner(socket)
        await #expect(
            throws: ProximityError.failed("controller refused LE Set Scan Parameters (status 0x12: invalid parameters)")
        ) { try await scanner.startScanning { _ in } }
        await scanner.stopScanning()  // no reader was started: nothing to do
        #expect(socket.written == Array(Self.scanCommands[..<2]))
    }

    @Test func reportsAreDeliveredInOrderWithDuplicates() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let seen = Collected<[UInt8]>()
        try await scanner.startScanning { seen.append($0) }
        let one = advertisingReportEvent([ReportFields(data: Self.advert)])
        let three = advertisingReportEvent([
            ReportFields(data: [0x02, 0x01, 0x06]), ReportFields(data: []), ReportFields(data: Self.advert),
        ])
        socket.inject(one)
        socket.inject(three)
        socket.inject(one)  // the controller does not filter duplicates, and neither do we
        #expect(try await seen.wait(for: 5) == [Self.advert, [0x02, 0x01, 0x06], [], Self.advert, Self.advert])
        await scanner.close()
    }

    @Test func hostileEventsAreSkipped() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let seen = Collected<[UInt8]>()
        try await scanner.startScanning { seen.append($0) }
        var random = SeededRandom(seed: 0xB1E2_0002)
        let valid = advertisingReportEvent([ReportFields(data: Self.advert), ReportFields(data: [9])])
        for (hostile, _) in HCICodecTests.hostile { socket.inject(bytes(hostile)) }
        for _ in 0..<500 {
            var event = random.mutate(valid)
            if event.count >= 3 { event[2] = UInt8(truncatingIfNeeded: event.count - 3) }
            if (try? HCIEvent(packet: event)) == nil { socket.inject(event) }
        }
        socket.inject(valid)
        #expect(try await seen.wait(for: 2) == [Self.advert, [9]])
        // An incomplete extended report is not delivered; a complete one is.
        let incomplete: [UInt8] = [0x0D, 0x01, 0x20, 0x00, 0x01] + [UInt8](repeating: 0, count: 20) + [1, 0xEE]
        let complete: [UInt8] = [0x0D, 0x01, 0x10, 0x00, 0x01] + [UInt8](repeating: 0, count: 20) + [1, 0xCC]
        socket.inject([0x04, 0x3E, UInt8(incomplete.count)] + incomplete)
        socket.inject([0x04, 0x3E, UInt8(complete.count)] + complete)
        #expect(try await seen.wait(for: 3) == [Self.advert, [9], [0xCC]])
        await scanner.close()
    }

    /// Reports keep arriving while the scan stops: once `stopScanning()` returns, no callback follows.
    ///
    /// All the reports are queued at once and each callback takes 0.1 ms on the reader's own thread, so the reader is
    /// still delivering (for about half a second) when the stop comes, however busy the machine and Swift's pool are.
    @Test func noCallbackAfterStop() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let seen = Collected<Int>()
        try await scanner.startScanning { _ in
            seen.append(1)
            usleep(100)
        }
        for _ in 0..<5000 { socket.inject(advertisingReportEvent([ReportFields(data: [1])])) }
        _ = try await seen.wait(for: 20)
        await scanner.stopScanning()
        let atStop = seen.all.count
        #expect(atStop >= 20)
        #expect(atStop < 5000, "the reader was still delivering when the stop came")
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.all.count == atStop)
        await scanner.close()
    }

    @Test func restartingReplacesTheCallback() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let first = Collected<[UInt8]>()
        let second = Collected<[UInt8]>()
        try await scanner.startScanning { first.append($0) }
        socket.inject(advertisingReportEvent([ReportFields(data: [1])]))
        #expect(try await first.wait(for: 1) == [[1]])
        try await scanner.startScanning { second.append($0) }
        socket.inject(advertisingReportEvent([ReportFields(data: [2])]))
        #expect(try await second.wait(for: 1) == [[2]])
        #expect(first.all == [[1]])
        #expect(socket.written == Self.scanCommands + Self.scanCommands)
        await scanner.close()
    }

    /// Dropping a scanner without `close()` still ends the reader, disables the scan and closes the socket.
    @Test func droppedScannerCleansUp() async throws {
        let socket = FakeHCISocket()
        let seen = Collected<[UInt8]>()
        do {
            let scanner = try Self.scanner(socket)
            try await scanner.startScanning { seen.append($0) }
            socket.inject(advertisingReportEvent([ReportFields(data: [1])]))
            #expect(try await seen.wait(for: 1) == [[1]])
        }
        #expect(socket.isClosed)
        #expect(socket.written == Self.scanCommands + [bytes("01 0C 20 02 00 00")])
    }

    @Test func droppedAdvertiserCleansUp() async throws {
        let socket = FakeHCISocket()
        do { try await Self.advertiser(socket).startAdvertising(Self.advert) }
        #expect(socket.isClosed)
        #expect(socket.written == Self.advertiseCommands + [bytes("01 0A 20 01 00")])
    }
}
