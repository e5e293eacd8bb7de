import CTAPHID
import Testing

typealias Host = CTAPHIDHostStateMachine

/// The 64-bit nonce the host tests use, and its bytes on the wire.
let hostNonce: UInt64 = 0x0102_0304_0506_0708
let hostNonceBytes: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
/// The channel the scripted devices assign.
let hostChannel: UInt32 = 0x1122_3344

/// An INIT response as a device sends it, built by hand: nonce, channel, version 2, device version 5.6.7, flags.
func initResponse(
    nonce: [UInt8] = hostNonceBytes, channel: UInt32 = hostChannel, capabilities: UInt8 = 0x0D, length: Int = 17
) -> [UInt8] {
    initReport(broadcast, hidInit, length: length, data: nonce + bigEndian(channel) + [2, 5, 6, 7, capabilities])
}

/// The reports among the actions.
func sentReports(_ actions: [Host.Action]) -> [[UInt8]] {
    actions.compactMap { action in
        if case .send(let report) = action { return report }
        return nil
    }
}

/// Feeds reports to the host, collecting every action.
func deliver(_ host: inout Host, _ reports: [[UInt8]], now: ContinuousClock.Instant = t0) throws -> [Host.Action] {
    var actions: [Host.Action] = []
    for report in reports { actions += try host.receive(report: report, now: now) }
    return actions
}

/// A host with `hostChannel` allocated and nothing in progress.
func hostWithChannel() throws -> Host {
    var host = Host()
    _ = try host.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
    let actions = try host.receive(report: initResponse(), now: t0)
    try #require(actions.count == 1)
    try #require(host.channel == ChannelID(rawValue: hostChannel))
    return host
}

/// A host waiting for the response to `command` on `hostChannel`, with a deadline at 5 s.
func hostWaiting(for command: CTAPHIDCommand = .cbor, payload: [UInt8] = [0x04]) throws -> Host {
    var host = try hostWithChannel()
    _ = try host.send(command: command, payload: payload, nonce: 0, now: t0, deadline: at(5000))
    return host
}

struct HostAllocationTests {
    @Test func allocationIsAnInitWithTheNonceOnTheBroadcastChannel() throws {
        var host = Host()
        let actions = try host.send(command: .cbor, payload: [0x04], nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(actions == [.send(report: initReport(broadcast, hidInit, hostNonceBytes))])
        #expect(host.isBusy)
        #expect(host.channel == nil)
        #expect(host.nextDeadline == at(1000))
    }

    @Test func initResponsesForOtherHostsAndOtherPacketsAreIgnored() throws {
        var host = Host()
        _ = try host.send(command: .cbor, payload: [0x04], nonce: hostNonce, now: t0, deadline: at(1000))
        let ignored = [
            initResponse(nonce: [1, 2, 3, 4, 5, 6, 7, 9]),  // another program's INIT on the same hidraw node
            initReport(hostChannel, hidInit, hostNonceBytes + bigEndian(7) + [2, 0, 0, 0, 0]),  // not broadcast
            initReport(broadcast, keepalive, [2]),
            initReport(broadcast, hidError, [0x06]),  // whose? every program sees it
            contReport(broadcast, seq: 0, data: hostNonceBytes),
            initReport(broadcast, ping, hostNonceBytes + [0, 0, 0, 1, 2, 0, 0, 0, 0]),
        ]
        #expect(try deliver(&host, ignored) == [])
        #expect(host.isBusy)
        let actions = try host.receive(report: initResponse(), now: t0)
        let info = CTAPHIDDeviceInfo(
            channel: ChannelID(rawValue: hostChannel), protocolVersion: 2,
            deviceVersion: DeviceVersion(major: 5, minor: 6, build: 7), capabilities: [.wink, .cbor, .nmsg])
        #expect(actions == [.channelAllocated(info), .send(report: initReport(hostChannel, cbor, [0x04]))])
        #expect(host.channel == ChannelID(rawValue: hostChannel))
    }

    @Test func aLongerInitResponseIsAcceptedAndAShorterOneRefused() throws {
        var host = Host()
        _ = try host.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
        let longer = try host.receive(report: initResponse(length: 20), now: t0)
        #expect(longer.count == 1)
        #expect(host.channel == ChannelID(rawValue: hostChannel))

        var short = Host()
        _ = try short.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(
            try short.receive(report: initResponse(length: 16), now: t0) == [
                .failed(.invalidResponseLength(command: .initialize, length: 16))
            ])
        #expect(!short.isBusy && short.channel == nil)
    }

    @Test(arguments: [UInt32(0), 0xFFFF_FFFF])
    func reservedChannelAssignmentsAreRefused(_ assigned: UInt32) throws {
        var host = Host()
        _ = try host.send(command: .ping, payload: [], nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(
            try host.receive(report: initResponse(channel: assigned), now: t0) == [
                .failed(.invalidChannelAssigned(ChannelID(rawValue: assigned)))
            ])
        #expect(!host.isBusy && host.channel == nil)
    }

    @Test func allocationTimesOutAtItsDeadline() throws {
        var host = Host()
        _ = try host.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(host.tick(now: at(999)) == [])
        #expect(host.tick(now: at(1000)) == [.failed(.channelAllocationTimedOut)])
        #expect(!host.isBusy && host.nextDeadline == nil)
        #expect(host.tick(now: at(5000)) == [])
        // A late answer finds nobody waiting.
        #expect(try host.receive(report: initResponse(), now: at(1001)) == [])
        #expect(host.channel == nil)
    }

    @Test func aReportAfterTheDeadlineExpiresTheAllocationFirst() throws {
        var host = Host()
        _ = try host.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(try host.receive(report: initResponse(), now: at(1000)) == [.failed(.channelAllocationTimedOut)])
        #expect(host.channel == nil)
    }

    @Test func allocatingAgainForgetsTheOldChannel() throws {
        var host = try hostWithChannel()
        let actions = try host.allocateChannel(nonce: 0xAA, now: t0, deadline: at(1000))
        #expect(actions == [.send(report: initReport(broadcast, hidInit, [0, 0, 0, 0, 0, 0, 0, 0xAA]))])
        #expect(host.channel == nil)
        let response = initReport(broadcast, hidInit, [0, 0, 0, 0, 0, 0, 0, 0xAA] + bigEndian(9) + [2, 0, 0, 0, 4])
        _ = try host.receive(report: response, now: t0)
        #expect(host.channel == ChannelID(rawValue: 9))
    }

    @Test func cancellingAnAllocationFailsAtOnce() throws {
        var host = Host()
        _ = try host.send(command: .cbor, payload: [4], nonce: hostNonce, now: t0, deadline: at(1000))
        #expect(host.cancel(now: t0) == [.failed(.cancelled)])
        #expect(!host.isBusy)
        #expect(host.cancel(now: t0) == [])
    }
}

struct HostSendingTests {
    static let lengths = [0, 1, 56, 57, 58, 115, 116, 117, 1000, 7550, 7551, 7608, 7609]

    @Test(arguments: lengths)
    func messagesAreFragmentedExactlyAsTheSpecificationSays(_ length: Int) throws {
        var host = try hostWithChannel()
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let reports = sentReports(try host.send(command: .ping, payload: payload, nonce: 0, now: t0, deadline: at(1)))
        #expect(reports == hostReports(hostChannel, ping, payload))
        #expect(reports.count == 1 + max(0, (length - 57 + 58) / 59))
        for (index, report) in reports.dropFirst().enumerated() { #expect(report[4] == UInt8(index)) }
    }

    @Test func aMessageTooLongForCTAPHIDIsRefusedAndChangesNothing() throws {
        var host = try hostWithChannel()
        #expect(throws: CTAPHIDHostError.messageTooLong(7610)) {
            try host.send(
                command: .cbor, payload: [UInt8](repeating: 1, count: 7610), nonce: 0, now: t0, deadline: at(1))
        }
        #expect(!host.isBusy)
        #expect(host.channel == ChannelID(rawValue: hostChannel))
    }

    @Test(arguments: [CTAPHIDCommand.initialize, .cancel, .keepalive, .error])
    func commandsOnlyDevicesOrTheStateMachineSendAreRefused(_ command: CTAPHIDCommand) throws {
        var host = try hostWithChannel()
        #expect(throws: CTAPHIDHostError.commandNotSendable(command)) {
            try host.send(command: command, payload: [], nonce: 0, now: t0, deadline: at(1))
        }
        #expect(!host.isBusy)
    }

    @Test func aSecondExchangeWhileOneIsInProgressIsRefused() throws {
        var host = try hostWaiting()
        #expect(throws: CTAPHIDHostError.busy) {
            try host.send(command: .ping, payload: [], nonce: 0, now: t0, deadline: at(1))
        }
        #expect(throws: CTAPHIDHostError.busy) { try host.allocateChannel(nonce: 1, now: t0, deadline: at(1)) }
        var allocating = Host()
        _ = try allocating.allocateChannel(nonce: 1, now: t0, deadline: at(1))
        #expect(throws: CTAPHIDHostError.busy) {
            try allocating.send(command: .ping, payload: [], nonce: 0, now: t0, deadline: at(1))
        }
    }

    @Test func theChannelIsKeptForTheNextExchange() throws {
        var host = try hostWaiting(for: .ping, payload: [9])
        #expect(
            try host.receive(report: initReport(hostChannel, ping, [9]), now: t0) == [
                .response(command: .ping, payload: [9])
            ])
        #expect(!host.isBusy && host.nextDeadline == nil)
        let next = try host.send(command: .wink, payload: [], nonce: hostNonce, now: t0, deadline: at(1))
        #expect(next == [.send(report: initReport(hostChannel, wink, []))])
    }

    @Test func reportsOfTheWrongSizeAreRefusedAndChangeNothing() throws {
        var host = try hostWaiting()
        for size in [0, 63, 65, 128] {
            #expect(throws: CTAPHIDFramingError.wrongReportSize(size)) {
                try host.receive(report: [UInt8](repeating: 0, count: size), now: t0)
            }
        }
        #expect(host.isBusy)
    }
}

struct HostResponseTests {
    @Test(arguments: [0, 1, 57, 58, 116, 117, 4000, 7609])
    func responsesAreReassembled(_ length: Int) throws {
        var host = try hostWaiting()
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let reports = hostReports(hostChannel, cbor, payload)
        var actions: [Host.Action] = []
        for report in reports.dropLast() {
            actions += try host.receive(report: report, now: t0)
            #expect(host.isBusy)
        }
        actions += try host.receive(report: reports.last!, now: t0)
        #expect(actions == [.response(command: .cbor, payload: payload)])
        #expect(!host.isBusy)
    }

    @Test func packetsOnOtherChannelsAndTheBroadcastChannelAreIgnoredMidResponse() throws {
        var host = try hostWaiting()
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let reports = hostReports(hostChannel, cbor, payload)
        let noise = [
            initReport(0x5555_5555, cbor, length: 300, data: [1]), contReport(0x5555_5555, seq: 7),
            initReport(0x5555_5555, hidError, [0x06]), initResponse(nonce: [9, 9, 9, 9, 9, 9, 9, 9]),
            contReport(broadcast, seq: 1), initReport(0x1122_3345, keepalive, [2]),
        ]
        var actions: [Host.Action] = []
        for (index, report) in reports.enumerated() {
            actions += try deliver(&host, [noise[index % noise.count]])
            actions += try host.receive(report: report, now: t0)
        }
        #expect(actions == [.response(command: .cbor, payload: payload)])
    }

    @Test func aContinuationBeforeTheResponseStartsIsIgnored() throws {
        var host = try hostWaiting()
        #expect(try host.receive(report: contReport(hostChannel, seq: 0, data: [1]), now: t0) == [])
        #expect(
            try host.receive(report: initReport(hostChannel, cbor, [0]), now: t0) == [
                .response(command: .cbor, payload: [0])
            ])
    }

    @Test(arguments: [(UInt8(1), UInt8(0)), (0, 1), (2, 1), (0x7F, 1)])
    func aContinuationOutOfSequenceFails(_ received: UInt8, _ expected: UInt8) throws {
        var host = try hostWaiting()
        var reports = [initReport(hostChannel, cbor, length: 500, data: [0])]
        if expected == 1 { reports.append(contReport(hostChannel, seq: 0)) }
        #expect(try deliver(&host, reports) == [])
        #expect(
            try host.receive(report: contReport(hostChannel, seq: received), now: t0) == [
                .failed(.outOfSequence(expected: expected, received: received))
            ])
        #expect(!host.isBusy && host.channel == nil)
    }

    @Test(arguments: [CTAPHIDCommand.keepalive, .error, .cbor, .ping])
    func anInitializationPacketMidResponseInterruptsIt(_ command: CTAPHIDCommand) throws {
        var host = try hostWaiting()
        _ = try host.receive(report: initReport(hostChannel, cbor, length: 100, data: [0]), now: t0)
        #expect(
            try host.receive(report: initReport(hostChannel, command.rawValue, [2]), now: t0) == [
                .failed(.messageInterrupted(by: command))
            ])
        #expect(host.channel == nil)
    }

    @Test func aResponseToAnotherCommandFails() throws {
        var host = try hostWaiting()
        #expect(
            try host.receive(report: initReport(hostChannel, ping, [0]), now: t0) == [
                .failed(.unexpectedCommand(.ping))
            ])
        var resynchronized = try hostWaiting()
        #expect(
            try resynchronized.receive(report: initReport(hostChannel, hidInit, [1]), now: t0) == [
                .failed(.unexpectedCommand(.initialize))
            ])
    }

    @Test func aResponseLongerThanCTAPHIDAllowsFails() throws {
        var host = try hostWaiting()
        #expect(
            try host.receive(report: initReport(hostChannel, cbor, length: 7610, data: [0]), now: t0) == [
                .failed(.invalidResponseLength(command: .cbor, length: 7610))
            ])
        var huge = try hostWaiting()
        #expect(
            try huge.receive(report: initReport(hostChannel, cbor, length: 0xFFFF, data: [0]), now: t0) == [
                .failed(.invalidResponseLength(command: .cbor, length: 0xFFFF))
            ])
    }

    @Test func keepalivesReportTheirStatusAndUnknownOnesAreIgnored() throws {
        var host = try hostWaiting()
        #expect(try host.receive(report: initReport(hostChannel, keepalive, [1]), now: t0) == [.keepalive(.processing)])
        #expect(
            try host.receive(report: initReport(hostChannel, keepalive, [2]), now: t0) == [
                .keepalive(.userPresenceNeeded)
            ])
        for status: UInt8 in [0, 3, 0xFF] {
            #expect(try host.receive(report: initReport(hostChannel, keepalive, [status]), now: t0) == [])
        }
        #expect(try host.receive(report: initReport(hostChannel, keepalive, length: 0), now: t0) == [])
        #expect(host.isBusy)
    }

    static let errorCodes: [(UInt8, String)] = [
        (0x01, "ERR_INVALID_CMD (0x01)"), (0x02, "ERR_INVALID_PAR (0x02)"), (0x03, "ERR_INVALID_LEN (0x03)"),
        (0x04, "ERR_INVALID_SEQ (0x04)"), (0x05, "ERR_MSG_TIMEOUT (0x05)"), (0x06, "ERR_CHANNEL_BUSY (0x06)"),
        (0x0A, "ERR_LOCK_REQUIRED (0x0A)"), (0x0B, "ERR_INVALID_CHANNEL (0x0B)"), (0x7F, "ERR_OTHER (0x7F)"),
        (0x55, "CTAPHID error (0x55)"),
    ]

    @Test(arguments: errorCodes)
    func errorsEndTheExchangeWithTheirName(_ code: UInt8, _ name: String) throws {
        var host = try hostWaiting()
        let expected = CTAPHIDHostError.deviceError(CTAPHIDErrorCode(rawValue: code))
        #expect(try host.receive(report: initReport(hostChannel, hidError, [code]), now: t0) == [.failed(expected)])
        #expect(String(describing: expected) == "the security key answered with a CTAPHID error: \(name)")
        #expect(!host.isBusy)
        // The device ended the exchange itself: the channel stays, unless the device says it is not one.
        #expect((host.channel == nil) == (code == 0x0B))
    }

    @Test func anErrorWithoutItsCodeFails() throws {
        var host = try hostWaiting()
        #expect(
            try host.receive(report: initReport(hostChannel, hidError, length: 0), now: t0) == [
                .failed(.invalidResponseLength(command: .error, length: 0))
            ])
    }
}

struct HostTimeoutAndCancelTests {
    @Test func aCBORRequestThatRunsOutOfTimeIsCancelledOnTheDevice() throws {
        var host = try hostWaiting()
        #expect(host.nextDeadline == at(5000))
        #expect(host.tick(now: at(4999)) == [])
        #expect(
            host.tick(now: at(5000)) == [
                .send(report: initReport(hostChannel, cancel, [])), .failed(.responseTimedOut(.cbor)),
            ])
        #expect(!host.isBusy && host.channel == nil)
        // The late answer is ignored, and the next exchange starts with a fresh channel.
        #expect(try host.receive(report: initReport(hostChannel, cbor, [0]), now: at(5001)) == [])
        #expect(
            try host.send(command: .cbor, payload: [4], nonce: hostNonce, now: at(5001), deadline: at(6000)) == [
                .send(report: initReport(broadcast, hidInit, hostNonceBytes))
            ])
    }

    @Test func otherExchangesTimeOutWithoutACancel() throws {
        var host = try hostWaiting(for: .ping, payload: [1, 2])
        #expect(host.tick(now: at(5000)) == [.failed(.responseTimedOut(.ping))])
    }

    @Test func aResponseHalfReassembledTimesOutToo() throws {
        var host = try hostWaiting()
        _ = try host.receive(report: initReport(hostChannel, cbor, length: 100, data: [0]), now: t0)
        #expect(
            try host.receive(report: contReport(hostChannel, seq: 0), now: at(6000)) == [
                .send(report: initReport(hostChannel, cancel, [])), .failed(.responseTimedOut(.cbor)),
            ])
    }

    @Test func cancelSendsCTAPHIDCancelOnceAndDeliversTheDevicesAnswer() throws {
        var host = try hostWaiting()
        #expect(host.cancel(now: at(100)) == [.send(report: initReport(hostChannel, cancel, []))])
        #expect(host.cancel(now: at(200)) == [])
        #expect(host.nextDeadline == at(1100))
        #expect(
            try host.receive(report: initReport(hostChannel, keepalive, [2]), now: at(300)) == [
                .keepalive(.userPresenceNeeded)
            ])
        #expect(
            try host.receive(report: initReport(hostChannel, cbor, [0x2D]), now: at(400)) == [
                .response(command: .cbor, payload: [0x2D])
            ])
        #expect(host.channel == ChannelID(rawValue: hostChannel))
    }

    @Test func aCancelledRequestWithoutAnAnswerFailsAfterTheGracePeriod() throws {
        var configuration = Host.Configuration()
        configuration.cancelGracePeriod = .milliseconds(250)
        var host = Host(configuration: configuration)
        _ = try host.allocateChannel(nonce: hostNonce, now: t0, deadline: at(1000))
        _ = try host.receive(report: initResponse(), now: t0)
        _ = try host.send(command: .cbor, payload: [1], nonce: 0, now: t0, deadline: at(5000))
        _ = host.cancel(now: at(100))
        #expect(host.tick(now: at(349)) == [])
        #expect(host.tick(now: at(350)) == [.failed(.cancelled)])
        #expect(host.channel == nil)
    }

    @Test func cancellingNearTheDeadlineKeepsTheDeadline() throws {
        var host = try hostWaiting()
        _ = host.cancel(now: at(4900))
        #expect(host.nextDeadline == at(5000))
    }

    @Test func cancellingAnExchangeThatIsNotCBORFailsAtOnce() throws {
        var host = try hostWaiting(for: .ping, payload: [1])
        #expect(host.cancel(now: t0) == [.failed(.cancelled)])
        #expect(host.channel == nil)
        var idle = try hostWithChannel()
        #expect(idle.cancel(now: t0) == [])
    }
}
