import CTAPHID
import TestSupport
import Testing

/// The host state machine against the device state machine, in memory: every report the host sends goes to the
/// device, and every report the device sends reaches the host, whichever program it is for, as on a hidraw node
/// that several programs have open.
struct Wire {
    var host = Host()
    var device: Machine
    var now = t0
    /// What reached the host's caller, in order.
    var hostEvents: [Host.Action] = []
    /// CBOR requests the device dispatched and has not answered yet.
    var dispatched: [(CBORTransactionID, [UInt8])] = []
    var cancelled: [CBORTransactionID] = []
    var winks = 0
    /// Reports for other programs that the host saw (they must change nothing).
    var overheard = 0
    /// When set, random reports on channels other than the host's reach the host before each report of the device.
    var noise: SeededRandom?

    init(channelIDs: [UInt64] = [0x1000_0001, 0x2000_0002, 0x3000_0003, 0x4000_0004]) {
        device = Machine(channelIDSource: ScriptedChannelIDs(channelIDs))
    }

    /// Carries out the host's actions, and whatever they cause, until nothing moves.
    mutating func run(_ actions: [Host.Action]) throws {
        var toDevice: [[UInt8]] = []
        for action in actions {
            if case .send(let report) = action { toDevice.append(report) } else { hostEvents.append(action) }
        }
        for report in toDevice { try runDevice(try device.receive(report: report, from: "host", now: now)) }
    }

    mutating func runDevice(_ actions: [Machine.Action]) throws {
        for action in actions {
            switch action {
            case .send(let report, let peer):
                if peer != "host" { overheard += 1 }
                try injectNoise()
                try run(try host.receive(report: report, now: now))
            case .dispatchCBOR(let transaction, let request):
                dispatched.append((transaction, request))
            case .cancel(let transaction):
                cancelled.append(transaction)
            case .wink:
                winks += 1
            }
        }
    }

    /// Up to two random reports on channels that are not the host's.
    mutating func injectNoise() throws {
        guard var random = noise else { return }
        for _ in 0..<random.below(3) {
            var report = random.bytes(64)
            if let channel = host.channel, report.prefix(4).elementsEqual(channel.bytes) { report[0] ^= 0xFF }
            overheard += 1
            try run(host.receive(report: report, now: now))
        }
        noise = random
    }

    /// The device's authenticator answers the oldest request.
    mutating func answer(_ response: [UInt8]) throws {
        let (transaction, _) = dispatched.removeFirst()
        try runDevice(device.cborResponse(response, for: transaction, now: now))
    }

    mutating func advance(by milliseconds: Int) throws {
        now = now.advanced(by: .milliseconds(milliseconds))
        try runDevice(device.tick(now: now))
        try run(host.tick(now: now))
    }

    mutating func send(_ command: CTAPHIDCommand, _ payload: [UInt8], nonce: UInt64 = 42, seconds: Int = 5) throws {
        try run(
            host.send(command: command, payload: payload, nonce: nonce, now: now, deadline: now + .seconds(seconds)))
    }

    /// The single response or failure among the host's events since the last call.
    mutating func outcome() -> Host.Action? {
        let outcomes = hostEvents.filter {
            switch $0 {
            case .response, .failed: true
            default: false
            }
        }
        hostEvents.removeAll()
        return outcomes.count == 1 ? outcomes[0] : nil
    }
}

struct HostDeviceLoopTests {
    @Test func pingsOfEveryLengthComeBackIntact() throws {
        var wire = Wire()
        var random = SeededRandom(seed: 0x0C7A_1D05)
        var lengths = [0, 1, 57, 58, 7609]
        for _ in 0..<40 { lengths.append(random.below(7610)) }
        for length in lengths {
            let payload = random.bytes(length)
            try wire.send(.ping, payload)
            #expect(wire.outcome() == .response(command: .ping, payload: payload), "length \(length)")
        }
        // One channel for all of them.
        #expect(wire.device.allocatedChannels == [ChannelID(rawValue: 0x1000_0001)])
    }

    @Test func theAllocationReportsTheDevice() throws {
        var wire = Wire()
        try wire.run(wire.host.allocateChannel(nonce: 7, now: wire.now, deadline: wire.now + .seconds(1)))
        let info = CTAPHIDDeviceInfo(
            channel: ChannelID(rawValue: 0x1000_0001), protocolVersion: 2,
            deviceVersion: DeviceVersion(major: 1, minor: 0, build: 0), capabilities: [.wink, .cbor, .nmsg])
        #expect(wire.hostEvents == [.channelAllocated(info)])
    }

    @Test func aCBORRequestTravelsToTheAuthenticatorAndItsLongAnswerBack() throws {
        var wire = Wire()
        let request = [0x01] + [UInt8](repeating: 0xA5, count: 2000)
        try wire.send(.cbor, request)
        try #require(wire.dispatched.count == 1)
        #expect(wire.dispatched[0].1 == request)
        let answer = [0x00] + (0..<7608).map { UInt8(truncatingIfNeeded: $0) }
        try wire.answer(answer)
        #expect(wire.outcome() == .response(command: .cbor, payload: answer))
    }

    @Test func keepalivesTellTheHostTheDeviceWaitsForATouch() throws {
        var wire = Wire()
        try wire.send(.cbor, [0x01, 0xA0])
        wire.hostEvents.removeAll()  // the channel's allocation
        let transaction = try #require(wire.dispatched.first?.0)
        try wire.advance(by: 100)
        try wire.runDevice(wire.device.keepaliveStatus(.userPresenceNeeded, for: transaction, now: wire.now))
        try wire.advance(by: 100)
        #expect(
            wire.hostEvents == [
                .keepalive(.processing), .keepalive(.userPresenceNeeded), .keepalive(.userPresenceNeeded),
            ])
        wire.hostEvents.removeAll()
        try wire.answer([0x00, 0xA0])
        #expect(wire.outcome() == .response(command: .cbor, payload: [0x00, 0xA0]))
    }

    @Test func cancelReachesTheAuthenticatorAndItsAnswerEndsTheExchange() throws {
        var wire = Wire()
        try wire.send(.cbor, [0x02, 0xA0])
        try wire.run(wire.host.cancel(now: wire.now))
        #expect(wire.cancelled.count == 1)
        try wire.answer([0x2D])
        #expect(wire.outcome() == .response(command: .cbor, payload: [0x2D]))
        // The channel is still good.
        try wire.send(.ping, [1])
        #expect(wire.outcome() == .response(command: .ping, payload: [1]))
    }

    @Test func aTimeoutCancelsOnTheDeviceAndTheNextExchangeGetsANewChannel() throws {
        var wire = Wire()
        try wire.send(.cbor, [0x01, 0xA0], seconds: 1)
        try wire.advance(by: 1000)
        #expect(wire.cancelled.count == 1)
        #expect(wire.outcome() == .failed(.responseTimedOut(.cbor)))
        // The authenticator's late answer goes to the old channel, which the host no longer listens to.
        try wire.answer([0x2D])
        #expect(wire.hostEvents.isEmpty)
        try wire.send(.ping, [7])
        #expect(wire.outcome() == .response(command: .ping, payload: [7]))
        #expect(wire.device.allocatedChannels.count == 2)
    }

    @Test func winkIsAnswered() throws {
        var wire = Wire()
        try wire.send(.wink, [])
        #expect(wire.outcome() == .response(command: .wink, payload: []))
        #expect(wire.winks == 1)
    }

    @Test func aBusyDeviceSaysSoAndTheChannelStaysUsable() throws {
        var wire = Wire()
        try wire.send(.ping, [1])
        _ = wire.outcome()
        // Another program starts a long message and stalls: the device is busy with it.
        let other = try allocate(&wire.device, from: "other", now: wire.now)
        _ = try wire.device.receive(
            report: initReport(other, ping, length: 200, data: [1]), from: "other", now: wire.now)
        try wire.send(.ping, [2])
        #expect(wire.outcome() == .failed(.deviceError(.channelBusy)))
        try wire.advance(by: 600)  // the other program's message times out
        try wire.send(.ping, [3])
        #expect(wire.outcome() == .response(command: .ping, payload: [3]))
    }

    @Test func otherProgramsTrafficOnTheSameNodeChangesNothing() throws {
        var wire = Wire(channelIDs: (1...64).map { UInt64($0) * 0x0101_0101 })
        // Random reports on channels the host does not own reach the host before every report of the device.
        wire.noise = SeededRandom(seed: 0x4015_E)
        var random = SeededRandom(seed: 0x4E01_5E)
        for round in 0..<60 {
            // Another program allocates a channel and pings between the host's exchanges; the device's answers
            // reach the host too.
            let otherNonce = random.bytes(8)
            try wire.runDevice(
                wire.device.receive(report: initReport(broadcast, hidInit, otherNonce), from: "other", now: wire.now))
            let payload = random.bytes(random.below(400))
            let nonce = random.next()
            if round % 3 == 0 {
                try wire.send(.cbor, [0x04] + payload, nonce: nonce)
                try wire.answer([0x00] + payload)
                #expect(wire.outcome() == .response(command: .cbor, payload: [0x00] + payload), "round \(round)")
            } else {
                try wire.send(.ping, payload, nonce: nonce)
                #expect(wire.outcome() == .response(command: .ping, payload: payload), "round \(round)")
            }
        }
        #expect(wire.overheard >= 200)
    }
}
