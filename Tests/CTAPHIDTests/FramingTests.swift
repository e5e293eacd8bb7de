import CTAPHID
import TestSupport
import Testing

struct FramingTests {
    @Test func parsesInitializationPacket() throws {
        let packet = try CTAPHIDPacket(report: initReport(0x0102_0304, cbor, length: 0x1234, data: [9, 8, 7]))
        #expect(packet.channel == ChannelID(rawValue: 0x0102_0304))
        #expect(packet.kind == .initialization(command: .cbor, payloadLength: 0x1234))
        #expect(packet.data.count == 57 && packet.data.prefix(4) == [9, 8, 7, 0])
    }

    @Test func parsesContinuationPacket() throws {
        let packet = try CTAPHIDPacket(report: contReport(0xFFFF_FFFE, seq: 127, data: [1]))
        #expect(packet.channel == ChannelID(rawValue: 0xFFFF_FFFE))
        #expect(packet.kind == .continuation(sequence: 127))
        #expect(packet.data.count == 59 && packet.data.first == 1)
    }

    @Test func packetRoundTrips() throws {
        let reports = [
            initReport(7, ping, length: 3, data: [1, 2, 3]),
            contReport(7, seq: 5, data: Array(repeating: 4, count: 59)),
        ]
        for report in reports {
            #expect(try CTAPHIDPacket(report: report).report == report)
        }
        let built = try CTAPHIDPacket(
            channel: ChannelID(rawValue: 7), kind: .initialization(command: .ping, payloadLength: 3), data: [1, 2, 3])
        #expect(built.report == reports[0])
    }

    @Test func packetRejectsOversizedDataAndSequence() {
        #expect(throws: CTAPHIDFramingError.dataTooLong(58, capacity: 57)) {
            try CTAPHIDPacket(
                channel: .broadcast, kind: .initialization(command: .ping, payloadLength: 58),
                data: Array(repeating: 0, count: 58))
        }
        #expect(throws: CTAPHIDFramingError.sequenceOutOfRange(128)) {
            try CTAPHIDPacket(channel: .broadcast, kind: .continuation(sequence: 128), data: [])
        }
    }

    @Test func messageFragmentationMatchesHostFraming() throws {
        for length in [0, 1, 57, 58, 116, 117, 7609] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
            let message = try CTAPHIDMessage(
                channel: ChannelID(rawValue: 0xDEAD_BEEF), command: .cbor, payload: payload)
            #expect(message.reports == hostReports(0xDEAD_BEEF, cbor, payload))
        }
        #expect(throws: CTAPHIDFramingError.messageTooLong(7610)) {
            try CTAPHIDMessage(channel: .broadcast, command: .ping, payload: Array(repeating: 0, count: 7610))
        }
        #expect(CTAPHIDPacket.maximumMessageLength == 7609)
    }

    @Test func namesAndCodes() {
        #expect(ChannelID(rawValue: 0xAB).description == "000000ab")
        #expect(ChannelID(rawValue: 0x0102_0304).bytes == [1, 2, 3, 4])
        #expect(CTAPHIDCommand(rawValue: 0x90) == .cbor)
        #expect(CTAPHIDCommand.cbor.description == "CBOR" && CTAPHIDCommand(rawValue: 0x55).description == "0x55")
        #expect(CTAPHIDCapabilities([.wink, .cbor, .nmsg]).rawValue == 0x0D)
        #expect(KeepaliveStatus.processing.rawValue == 1 && KeepaliveStatus.userPresenceNeeded.rawValue == 2)
    }

    static let apdus: [(bytes: [UInt8], data: [UInt8], ne: Int?)] = [
        ([0, 3, 0, 0], [], nil),
        ([0, 3, 0, 0, 0], [], 256),
        ([0, 3, 0, 0, 9], [], 9),
        ([0, 1, 0, 0, 2, 7, 8], [7, 8], nil),
        ([0, 1, 0, 0, 2, 7, 8, 0], [7, 8], 256),
        ([0, 1, 0, 0, 0, 0, 0], [], 65536),
        ([0, 1, 0, 0, 0, 1, 0], [], 256),
        ([0, 1, 0, 0, 0, 0, 2, 7, 8], [7, 8], nil),
        ([0, 1, 0, 0, 0, 0, 2, 7, 8, 0x01, 0x00], [7, 8], 256),
        ([0, 1, 0, 0, 0, 0, 2, 7, 8, 0, 0], [7, 8], 65536),
    ]

    @Test(arguments: apdus)
    func parsesCommandAPDUs(bytes: [UInt8], data: [UInt8], ne: Int?) throws {
        let apdu = try CommandAPDU(bytes: bytes)
        #expect(apdu.cla == bytes[0] && apdu.ins == bytes[1])
        #expect(apdu.data == data)
        #expect(apdu.maximumResponseLength == ne)
    }

    @Test func rejectsMalformedAPDUs() {
        #expect(throws: APDUError.missingHeader(3)) { try CommandAPDU(bytes: [0, 1, 2]) }
        #expect(throws: APDUError.inconsistentBody(2)) { try CommandAPDU(bytes: [0, 1, 0, 0, 0, 1]) }
        #expect(throws: APDUError.inconsistentBody(3)) { try CommandAPDU(bytes: [0, 1, 0, 0, 3, 1, 2]) }
        #expect(throws: APDUError.inconsistentBody(4)) { try CommandAPDU(bytes: [0, 1, 0, 0, 0, 0, 0, 9]) }
    }
}

struct HostileInputTests {
    /// Random and half-valid reports never crash the state machine, every output is a well-formed report,
    /// and memory stays bounded.
    @Test func randomReportsAreHandledSafely() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 8
        var machine = Machine(configuration: configuration, channelIDSource: SeededRandom(seed: 99))
        var random = SeededRandom(seed: 12345)
        var known: [UInt32] = [broadcast, 0]
        var pending: [CBORTransactionID] = []
        var clock = 0
        var commandsSent: Set<UInt8> = []
        var dispatches = 0
        for round in 0..<20_000 {
            clock += Int(random.next() % 40)
            var report = (0..<64).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if random.next() % 2 == 0, let cid = known.randomElement(using: &random) {
                report.replaceSubrange(0..<4, with: bigEndian(cid))
            }
            if round % 5 == 0 {
                // A well-formed broadcast INIT keeps channels coming.
                report = initReport(broadcast, hidInit, (0..<8).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            }
            if random.next() % 3 == 0 {
                // Plausible commands with small lengths.
                let commands: [UInt8] = [ping, msg, lock, hidInit, wink, cbor, cancel]
                report[4] = 0x80 | commands[Int(random.next() % UInt64(commands.count))]
                report[5] = 0
                report[6] = UInt8(random.next() % (random.next() % 2 == 0 ? 3 : 120))
                report[7] = UInt8(random.next() % 16)
            }
            var actions = try machine.receive(report: report, from: "peer\(random.next() % 3)", now: at(clock))
            actions += machine.tick(now: at(clock))
            if let transaction = pending.first, random.next() % 4 == 0 {
                pending.removeFirst()
                actions += machine.cborResponse([0, 1, 2], for: transaction, now: at(clock))
            }
            for action in actions {
                switch action {
                case .send(let out, _):
                    #expect(out.count == 64)
                    if out[4] & 0x80 != 0 { commandsSent.insert(out[4]) }
                    if out[4] == 0x86 && out[6] == 17 {
                        known.append(out[15..<19].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                    }
                case .dispatchCBOR(let transaction, let request):
                    #expect(!request.isEmpty && request.count <= 7609)
                    pending.append(transaction)
                    dispatches += 1
                case .cancel, .wink:
                    break
                }
            }
            #expect(machine.allocatedChannels.count <= 8)
            if known.count > 64 { known.removeFirst(32) }
        }
        // The run reached the interesting paths, not just the error ones.
        #expect(dispatches > 10)
        #expect(commandsSent.isSuperset(of: [0x81, 0x83, 0x84, 0x86, 0x88, 0x90, 0xBB, 0xBF]))
    }
}
