import Glibc
import Proximity
import Testing

@testable import BlueZProximity

/// The advertiser and scanner against a fake HCI socket: exact command bytes out, event bytes in.
struct BlueZProximityTests {
    static let advert = cableAdvert((1...20).map { UInt8($0) })
    static let advertiseCommands = [
        bytes("01 0A 20 01 00"),
        bytes("01 06 20 0F A0 00 A0 00 03 00 00 00 00 00 00 00 00 07 00"),
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
        try BlueZAdvertiser(adapter: 0, options: options) { _ throws(HCISocketError) in socket }
    }

    static func scanner(_ socket: FakeHCISocket) throws -> BlueZScanner {
        try BlueZScanner(adapter: 0, options: fast()) { _ throws(HCISocketError) in socket }
    }

    // MARK: Advertising

    @Test func advertiseSendsDisableParametersDataEnable() async throws {
        let socket = FakeHCISocket()
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        #expect(socket.written == Self.advertiseCommands)

        await advertiser.stopAdvertising()
        #expect(socket.written == Self.advertiseCommands + [bytes("01 0A 20 01 00")])
        await advertiser.stopAdvertising()  // twice: nothing more
        #expect(socket.written.count == 5)

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
        #expect(socket.written.count == 5)
        #expect(socket.isClosed)
    }

    @Test func restartReplacesTheData() async throws {
        let socket = FakeHCISocket()
        let advertiser = try Self.advertiser(socket)
        try await advertiser.startAdvertising(Self.advert)
        try await advertiser.startAdvertising([0x02, 0x01, 0x06])
        let second = Array(socket.written[4...])
        #expect(second.count == 4)
        #expect(second[0] == bytes("01 0A 20 01 00"))
        #expect(second[2] == bytes("01 08 20 20 03 02 01 06") + [UInt8](repeating: 0, count: 28))
    }

    @Test func customIntervalIsSent() async throws {
        var options = Self.fast()
        options.advertisingInterval = 0x0640  // 1 s
        let socket = FakeHCISocket()
        try await Self.advertiser(socket, options: options).startAdvertising(Self.advert)
        #expect(socket.written[1] == bytes("01 06 20 0F 40 06 40 06 03 00 00 00 00 00 00 00 00 07 00"))
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
        #expect(socket.written == Array(Self.advertiseCommands[..<3]))  // not enabled after the failure
        await advertiser.stopAdvertising()  // nothing was enabled: nothing to disable
        #expect(socket.written.count == 3)
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
                commandComplete(0x0C03, status: 0x12), commandStatus(0x2005, status: 0x0C), bytes("04 0E 09 01"),
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

    /// A thread keeps injecting reports while the scan stops: once `stopScanning()` returns, no callback follows.
    @Test func noCallbackAfterStop() async throws {
        let socket = FakeHCISocket()
        let scanner = try Self.scanner(socket)
        let seen = Collected<Int>()
        try await scanner.startScanning { _ in seen.append(1) }
        // The feeder sleeps between reports rather than blocking a thread of the cooperative pool, which has only
        // as many threads as cores and which every other test shares.
        let feeding = Task.detached {
            while !Task.isCancelled {
                socket.inject(advertisingReportEvent([ReportFields(data: [1])]))
                try? await Task.sleep(for: .microseconds(100))
            }
        }
        _ = try await seen.wait(for: 20)
        await scanner.stopScanning()
        let atStop = seen.all.count
        #expect(atStop >= 20)
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.all.count == atStop)
        feeding.cancel()
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

    // MARK: Errors users see

    static let errnoMessages: [(Int32, String)] = [
        (EAFNOSUPPORT, "this kernel has no Bluetooth support (AF_BLUETOOTH); use --ble sim to use the simulated radio"),
        (
            ENODEV,
            "no Bluetooth adapter hci1 (`hciconfig` or `btmgmt info` lists the adapters); use --ble sim to use the simulated radio"
        ),
        (
            ERFKILL,
            "Bluetooth adapter hci1 is blocked by rfkill: `rfkill unblock bluetooth`; or use --ble sim to use the simulated radio"
        ),
        (
            EBUSY,
            "Bluetooth adapter hci1 is held exclusively by another program (HCI user channel); or use --ble sim to use the simulated radio"
        ),
        (
            ENETDOWN,
            "Bluetooth adapter hci1 is down: `sudo hciconfig hci1 up`; or use --ble sim to use the simulated radio"
        ),
    ]

    @Test(arguments: errnoMessages) func openErrorsSayWhatToDo(code: Int32, message: String) {
        #expect(throws: ProximityError.unavailable(message)) {
            try BlueZAdvertiser(adapter: 1, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "bind", code: code)
            }
        }
        #expect(throws: ProximityError.unavailable(message)) {
            try BlueZScanner(adapter: 1, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "socket", code: code)
            }
        }
    }

    @Test(arguments: [EPERM, EACCES]) func missingCapabilitiesSayWhatToDo(code: Int32) throws {
        let error = #expect(throws: ProximityError.self) {
            try BlueZScanner(adapter: 2, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "ioctl(HCIDEVUP)", code: code)
            }
        }
        guard case .unavailable(let text) = try #require(error) else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(text.hasPrefix("Bluetooth adapter hci2 through a raw HCI socket needs CAP_NET_RAW and CAP_NET_ADMIN"))
        #expect(text.contains("run as root or `sudo setcap cap_net_raw,cap_net_admin+ep /"))
        #expect(text.hasSuffix("; or use --ble sim to use the simulated radio"))
    }

    @Test func permissionRefusedOnWriteSaysWhatToDo() async throws {
        let socket = FakeHCISocket()
        socket.failWrites(EPERM)
        let error = await #expect(throws: ProximityError.self) {
            try await Self.advertiser(socket).startAdvertising(Self.advert)
        }
        #expect(error?.description.contains("needs CAP_NET_RAW and CAP_NET_ADMIN") == true)
    }

    @Test func otherErrnoIsAFailure() {
        #expect(throws: ProximityError.failed("bind on hci0: Invalid argument (errno 22)")) {
            try BlueZAdvertiser(adapter: 0, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "bind", code: EINVAL)
            }
        }
    }

    @Test func adapterOutOfRange() {
        #expect(
            throws: ProximityError.unavailable(
                "no Bluetooth adapter hci65535; use --ble sim to use the simulated radio")
        ) {
            try BlueZAdvertiser(adapter: 65535, options: BlueZOptions()) { _ throws(HCISocketError) in FakeHCISocket() }
        }
    }

    /// The real socket on this machine, no fake: a kernel without Bluetooth (no /sys/class/bluetooth) must give the
    /// EAFNOSUPPORT message; a kernel with Bluetooth but no hci0 the "no adapter" one.
    @Test(.enabled(if: access("/sys/class/bluetooth/hci0", F_OK) != 0, "hci0 exists: only error paths are checked"))
    func realSocketOnThisMachine() {
        let kernelHasBluetooth = access("/sys/class/bluetooth", F_OK) == 0
        let expected =
            kernelHasBluetooth
            ? ProximityError.unavailable(
                "no Bluetooth adapter hci0 (`hciconfig` or `btmgmt info` lists the adapters); use --ble sim to use the simulated radio"
            )
            : .unavailable(
                "this kernel has no Bluetooth support (AF_BLUETOOTH); use --ble sim to use the simulated radio")
        #expect(throws: expected) { _ = try BlueZRadio.advertiser(adapter: 0) }
        #expect(throws: expected) { _ = try BlueZRadio.scanner(adapter: 0) }
        #expect(ProximityMode(argument: "hci") == .hci(adapter: 0))
    }
}
