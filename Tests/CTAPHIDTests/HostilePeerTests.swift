import CTAPHID
import TestSupport
import Testing

/// One local client must not be able to deny the authenticator to the others (issue 10).
struct HostilePeerTests {
    @Test func aFloodOfInitsFromOnePeerRecyclesOnlyItsOwnChannels() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 11))
        let alice = try allocate(&machine, from: "alice")
        for _ in 0..<(3 * machine.configuration.maximumChannels) { _ = try allocate(&machine, from: "mallory") }
        #expect(machine.allocatedChannels.contains(ChannelID(rawValue: alice)))
        let pong = try machine.receive(report: initReport(alice, ping, [7]), from: "alice", now: at(1))
        #expect(replies(pong) == [Reply(peer: "alice", cid: alice, command: ping, payload: [7])])
    }

    @Test func aPeerWithoutChannelsTakesTheOldestChannelOfThePeerHoldingTheMost() throws {
        var configuration = Machine.Configuration()
        configuration.maximumChannels = 3
        var machine = Machine(configuration: configuration, channelIDSource: ScriptedChannelIDs([1, 2, 3, 4]))
        #expect(try allocate(&machine, from: "alice") == 1)  // the least recently used of all
        #expect(try allocate(&machine, from: "mallory") == 2)
        #expect(try allocate(&machine, from: "mallory") == 3)
        #expect(try allocate(&machine, from: "bob") == 4)
        #expect(machine.allocatedChannels == Set([1, 3, 4].map(ChannelID.init(rawValue:))))
    }

    @Test func aContinuationFromAnotherPeerIsIgnored() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 12))
        let cid = try allocate(&machine)
        let payload = (0..<150).map { UInt8($0) }
        let reports = hostReports(cid, ping, payload)
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        let forged = contReport(cid, seq: 0, data: Array(repeating: 0xEE, count: 59))
        #expect(try machine.receive(report: forged, from: "mallory", now: at(1)).isEmpty)
        let actions = try feed(&machine, Array(reports.dropFirst()), now: at(2))
        #expect(replies(actions) == [Reply(peer: "alice", cid: cid, command: ping, payload: payload)])
    }

    @Test func anotherPeerCannotResynchronizeOrAbortAMessageInProgress() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 13))
        let cid = try allocate(&machine)
        let payload = (0..<150).map { UInt8(255 - $0) }
        let reports = hostReports(cid, ping, payload)
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        for command in [hidInit, ping, cbor] {
            let actions = try machine.receive(
                report: initReport(cid, command, [1, 2, 3, 4, 5, 6, 7, 8]), from: "mallory", now: at(1))
            #expect(replies(actions) == [errorReply(cid, 0x06, to: "mallory")])
        }
        #expect(try machine.receive(report: initReport(cid, cancel, []), from: "mallory", now: at(1)).isEmpty)
        let actions = try feed(&machine, Array(reports.dropFirst()), now: at(2))
        #expect(replies(actions) == [Reply(peer: "alice", cid: cid, command: ping, payload: payload)])
    }

    @Test func theLockHoldersChannelIsBusyForOtherPeers() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 14))
        let cid = try allocate(&machine)
        _ = try machine.receive(report: initReport(cid, lock, [5]), from: "alice", now: t0)
        let actions = try machine.receive(report: initReport(cid, ping, [1]), from: "mallory", now: at(1))
        #expect(replies(actions) == [errorReply(cid, 0x06, to: "mallory")])
        let pong = try machine.receive(report: initReport(cid, ping, [1]), from: "alice", now: at(2))
        #expect(replies(pong) == [Reply(peer: "alice", cid: cid, command: ping, payload: [1])])
    }

    /// 7609 bytes fed one continuation packet every 400 ms: each gap is within the 500 ms packet timeout, but
    /// the whole message is cut off 3 s after its first packet, so nobody else waits a minute.
    @Test func aWholeMessageMustArriveWithinTheMessageTimeout() throws {
        var machine = Machine(channelIDSource: SeededRandom(seed: 15))
        let cid = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        let reports = hostReports(cid, ping, Array(repeating: 0x5A, count: 7609))
        #expect(reports.count == 129)  // 128 continuations: 51 s at one per 0.4 s
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        var sent = 1
        while sent * 400 < 3000 {
            #expect(try machine.receive(report: reports[sent], from: "alice", now: at(sent * 400)).isEmpty)
            sent += 1
        }
        #expect(machine.tick(now: at(2999)).isEmpty)
        #expect(replies(machine.tick(now: at(3000))) == [errorReply(cid, 0x05)])
        #expect(!machine.isBusy)
        let pong = try machine.receive(report: initReport(bob, ping, [3]), from: "bob", now: at(3001))
        #expect(replies(pong) == [Reply(peer: "bob", cid: bob, command: ping, payload: [3])])
        // The rest of the message is now spurious.
        #expect(try machine.receive(report: reports[sent], from: "alice", now: at(3002)).isEmpty)
    }

    @Test func theMessageTimeoutIsConfigurable() throws {
        var configuration = Machine.Configuration()
        configuration.messageTimeout = .milliseconds(700)
        var machine = Machine(configuration: configuration, channelIDSource: SeededRandom(seed: 16))
        let cid = try allocate(&machine)
        let reports = hostReports(cid, ping, Array(repeating: 1, count: 300))
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        #expect(try machine.receive(report: reports[1], from: "alice", now: at(400)).isEmpty)
        // Due at 700 ms (the whole message), before the gap timeout at 900 ms.
        #expect(
            replies(try machine.receive(report: reports[2], from: "alice", now: at(700))) == [
                errorReply(cid, 0x05)
            ])
    }
}
