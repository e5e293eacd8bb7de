import CTAPHID
import TestSupport
import Testing

struct ChannelAllocationTests {
    @Test func broadcastInitAllocatesChannelByteForByte() throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([0xAABB_CCDD_0102_0304]))
        let nonce: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        let actions = try machine.receive(report: initReport(broadcast, hidInit, nonce), from: "alice", now: t0)
        var expected: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x86, 0x00, 0x11] + nonce
        expected += [0x01, 0x02, 0x03, 0x04, 0x02, 0x01, 0x00, 0x00, 0x0D]
        expected += Array(repeating: 0, count: 64 - expected.count)
        #expect(actions == [.send(report: expected, to: "alice")])
        #expect(machine.allocatedChannels == [ChannelID(rawValue: 0x0102_0304)])
    }

    @Test func initReportsConfiguredDeviceVersion() throws {
        var configuration = Machine.Configuration()
        configuration.deviceVersion = DeviceVersion(major: 3, minor: 4, build: 5)
        var machine = Machine(configuration: configuration, channelIDSource: ScriptedChannelIDs([7]))
        let reply = try #require(
            onlyReply(
                try machine.receive(
                    report: initReport(broadcast, hidInit, [0, 0, 0, 0, 0, 0, 0, 0]), from: "a", now: t0)))
        #expect(reply.payload[8...] == [0, 0, 0, 7, 2, 3, 4, 5, 0x0D])
    }

    @Test func allocationSkipsReservedAndInUseIdentifiers() throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([0, 0xFFFF_FFFF, 0x11, 0x1_0000_0000, 0x11, 0x22]))
        #expect(try allocate(&machine) == 0x11)
        // 0x1_0000_0000 truncates to 0 (reserved), 0x11 is taken.
        #expect(try allocate(&machine) == 0x22)
    }

    @Test func constantSourceStillYieldsDistinctValidChannels() throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([0xFFFF_FFFF]))
        var seen: Set<UInt32> = []
        for _ in 0..<20 { seen.insert(try allocate(&machine)) }
        #expect(seen.count == 20)
        #expect(!seen.contains(0) && !seen.contains(broadcast))
    }

    @Test func initOnAllocatedChannelResyncsAndKeepsIdentifier() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 1))
        let cid = try allocate(&machine)
        // Start a two-packet PING, then resynchronize in the middle of it.
        #expect(
            try machine.receive(
                report: initReport(cid, ping, length: 100, data: Array(repeating: 9, count: 57)), from: "alice", now: t0
            ).isEmpty)
        let nonce: [UInt8] = [8, 7, 6, 5, 4, 3, 2, 1]
        let reply = try #require(
            onlyReply(try machine.receive(report: initReport(cid, hidInit, nonce), from: "alice", now: t0)))
        #expect(reply.cid == cid && reply.command == hidInit)
        #expect(reply.payload == nonce + bigEndian(cid) + [2, 1, 0, 0, 0x0D])
        #expect(!machine.isBusy)
        // The rest of the aborted PING is now a spurious continuation packet.
        #expect(try machine.receive(report: contReport(cid, seq: 0), from: "alice", now: t0).isEmpty)
        #expect(machine.allocatedChannels.count == 1)
    }

    @Test func resyncAbortsOutstandingCBORAndDropsItsLateResponse() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 2))
        let cid = try allocate(&machine)
        let (first, request) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [0x04]), from: "alice", now: t0)))
        #expect(request == [0x04] && first.channel == ChannelID(rawValue: cid))

        let actions = try machine.receive(
            report: initReport(cid, hidInit, [1, 1, 1, 1, 1, 1, 1, 1]), from: "alice", now: at(10))
        #expect(actions.first == .cancel(first))
        #expect(replies(actions).map(\.command) == [hidInit])

        let (second, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [0x04]), from: "alice", now: at(20))))
        #expect(second != first)
        #expect(machine.cborResponse([0x2D], for: first, now: at(30)).isEmpty)
        let reply = try #require(onlyReply(machine.cborResponse([0x00, 0xA0], for: second, now: at(40))))
        #expect(reply == Reply(peer: "alice", cid: cid, command: cbor, payload: [0x00, 0xA0]))
    }

    @Test(arguments: [0, 7, 9, 57])
    func initWithWrongLengthIsInvalidLength(length: Int) throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 3))
        let data = Array(repeating: UInt8(0x42), count: min(length, 57))
        let onBroadcast = try machine.receive(
            report: initReport(broadcast, hidInit, length: length, data: data), from: "alice", now: t0)
        #expect(replies(onBroadcast) == [errorReply(broadcast, 0x03)])
        #expect(machine.allocatedChannels.isEmpty)

        let cid = try allocate(&machine)
        let onChannel = try machine.receive(
            report: initReport(cid, hidInit, length: length, data: data), from: "alice", now: t0)
        #expect(replies(onChannel) == [errorReply(cid, 0x03)])
    }

    @Test(arguments: [ping, msg, lock, wink, cbor, cancel, 0x50])
    func nonInitCommandOnBroadcastIsInvalidChannel(command: UInt8) throws {
        var machine = Machine()
        let actions = try machine.receive(report: initReport(broadcast, command, [0x01]), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(broadcast, 0x0B)])
    }

    @Test(arguments: [ping, hidInit, cbor])
    func reservedChannelZeroIsInvalidChannel(command: UInt8) throws {
        var machine = Machine()
        let actions = try machine.receive(
            report: initReport(0, command, [1, 2, 3, 4, 5, 6, 7, 8]), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(0, 0x0B)])
        #expect(machine.allocatedChannels.isEmpty)
    }

    @Test func unallocatedChannelIsInvalidChannel() throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([0x1234]))
        _ = try allocate(&machine)
        for command in [ping, hidInit, cbor, wink, lock] {
            let actions = try machine.receive(
                report: initReport(0x1235, command, [1, 2, 3, 4, 5, 6, 7, 8]), from: "bob", now: t0)
            #expect(replies(actions) == [errorReply(0x1235, 0x0B, to: "bob")])
        }
    }

    @Test func channelTableEvictsLeastRecentlyUsed() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 3
        var machine = Machine(configuration: configuration, channelIDSource: ScriptedChannelIDs([1, 2, 3, 4, 5]))
        #expect(try (0..<3).map { _ in try allocate(&machine) } == [1, 2, 3])
        // Using channel 1 makes channel 2 the least recently used.
        #expect(
            replies(try machine.receive(report: initReport(1, ping, [7]), from: "alice", now: t0)).map(\.command) == [
                ping
            ])
        #expect(try allocate(&machine) == 4)
        #expect(machine.allocatedChannels == Set([1, 3, 4].map(ChannelID.init(rawValue:))))
        #expect(
            replies(try machine.receive(report: initReport(2, ping, [7]), from: "alice", now: t0)) == [
                errorReply(2, 0x0B)
            ])
        #expect(try allocate(&machine) == 5)
        #expect(machine.allocatedChannels == Set([1, 4, 5].map(ChannelID.init(rawValue:))))
    }

    @Test func channelTableIsBoundedUnderAFloodOfInits() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 4))
        for _ in 0..<1000 { _ = try allocate(&machine) }
        #expect(machine.allocatedChannels.count == 64)
    }

    @Test func evictionSparesTheBusyChannel() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 2
        var machine = Machine(configuration: configuration, channelIDSource: SeededRandom(seed: 5))
        let worker = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(worker, cbor, [4]), from: "alice", now: t0)))
        for _ in 0..<10 { _ = try allocate(&machine, from: "mallory") }
        #expect(machine.allocatedChannels.contains(ChannelID(rawValue: worker)))
        #expect(machine.allocatedChannels.count == 2)
        let reply = onlyReply(machine.cborResponse([0], for: transaction, now: at(1)))
        #expect(reply == Reply(peer: "alice", cid: worker, command: cbor, payload: [0]))
    }

    @Test func evictionSparesTheLockHolder() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 2
        var machine = Machine(configuration: configuration, channelIDSource: SeededRandom(seed: 5))
        let locker = try allocate(&machine)
        let locked = try machine.receive(report: initReport(locker, lock, [5]), from: "alice", now: t0)
        #expect(replies(locked) == [Reply(peer: "alice", cid: locker, command: lock, payload: [])])
        for _ in 0..<10 { _ = try allocate(&machine, from: "mallory", now: at(100)) }
        #expect(machine.allocatedChannels.contains(ChannelID(rawValue: locker)))
        let pong = try machine.receive(report: initReport(locker, ping, [1]), from: "alice", now: at(200))
        #expect(replies(pong) == [Reply(peer: "alice", cid: locker, command: ping, payload: [1])])
    }

    @Test func fullTableOfProtectedChannelsAnswersBusy() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 1
        var machine = Machine(configuration: configuration, channelIDSource: SeededRandom(seed: 6))
        let worker = try allocate(&machine)
        _ = try #require(dispatched(try machine.receive(report: initReport(worker, cbor, [4]), from: "alice", now: t0)))
        let actions = try machine.receive(
            report: initReport(broadcast, hidInit, [1, 2, 3, 4, 5, 6, 7, 8]), from: "bob", now: t0)
        #expect(replies(actions) == [errorReply(broadcast, 0x06, to: "bob")])
        #expect(machine.allocatedChannels == [ChannelID(rawValue: worker)])
    }
}
