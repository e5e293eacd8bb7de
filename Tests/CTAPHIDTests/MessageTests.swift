import CTAPHID
import Testing

struct MessageTests {
    @Test func pingEchoesSinglePacket() throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([0xC1D2]))
        let cid = try allocate(&machine)
        let payload: [UInt8] = Array("Hello FIDO".utf8)
        let actions = try machine.receive(report: initReport(cid, ping, payload), from: "alice", now: t0)
        var expected: [UInt8] = [0x00, 0x00, 0xC1, 0xD2, 0x81, 0x00, 0x0A] + payload
        expected += Array(repeating: 0, count: 64 - expected.count)
        #expect(actions == [.send(report: expected, to: "alice")])
    }

    @Test func emptyPingEchoesEmpty() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let reply = onlyReply(try machine.receive(report: initReport(cid, ping, []), from: "alice", now: t0))
        #expect(reply == Reply(peer: "alice", cid: cid, command: ping, payload: []))
    }

    @Test(arguments: [58, 116, 117, 1000, 7609])
    func pingEchoesMultiPacketMessages(length: Int) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let reports = hostReports(cid, ping, payload)
        var actions: [Machine.Action] = []
        for (index, report) in reports.enumerated() {
            let step = try machine.receive(report: report, from: "alice", now: at(index))
            if index < reports.count - 1 { #expect(step.isEmpty) }
            actions += step
        }
        let sent = actions.compactMap { if case .send(let report, _) = $0 { report } else { nil } }
        #expect(sent.count == reports.count)
        // The authenticator's framing of the echo is exactly the host's framing with the same command.
        #expect(sent == reports)
        #expect(replies(actions) == [Reply(peer: "alice", cid: cid, command: ping, payload: payload)])
    }

    @Test func maximumMessageUsesSequenceNumbersUpTo127() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let payload = Array(repeating: UInt8(0xAB), count: 7609)
        let actions = try feed(&machine, hostReports(cid, ping, payload))
        let sent = actions.compactMap { if case .send(let report, _) = $0 { report } else { nil } }
        #expect(sent.count == 129)
        #expect(sent[0][4...6] == [0x81, 0x1D, 0xB9])
        #expect(sent.dropFirst().map { $0[4] } == Array(0...127))
        #expect(sent.last?[5...] == ArraySlice(Array(repeating: 0xAB, count: 59)))
    }

    @Test(arguments: [7610, 0xFFFF])
    func overLongMessageIsInvalidLengthAndLeavesNoState(length: Int) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let actions = try machine.receive(
            report: initReport(cid, ping, length: length, data: Array(repeating: 1, count: 57)), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(cid, 0x03)])
        #expect(!machine.isBusy)
        #expect(try machine.receive(report: contReport(cid, seq: 0), from: "alice", now: t0).isEmpty)
    }

    @Test func wrongSequenceNumberAbortsWithInvalidSeq() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let payload = Array(repeating: UInt8(5), count: 200)
        let reports = hostReports(cid, ping, payload)
        #expect(try feed(&machine, [reports[0], reports[1]]).isEmpty)
        // Sequence 2 instead of 1.
        let actions = try machine.receive(report: contReport(cid, seq: 2), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(cid, 0x04)])
        #expect(!machine.isBusy)
        // The transaction is gone: the real sequence 1 is now spurious.
        #expect(try machine.receive(report: reports[2], from: "alice", now: t0).isEmpty)
        // And the channel still works.
        #expect(
            replies(try feed(&machine, reports)) == [Reply(peer: "alice", cid: cid, command: ping, payload: payload)])
    }

    @Test func repeatedSequenceNumberIsInvalidSeq() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let reports = hostReports(cid, ping, Array(repeating: 5, count: 200))
        #expect(try feed(&machine, [reports[0], reports[1]]).isEmpty)
        #expect(replies(try machine.receive(report: reports[1], from: "alice", now: t0)) == [errorReply(cid, 0x04)])
    }

    @Test func continuationWithoutTransactionIsIgnored() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        #expect(try machine.receive(report: contReport(cid, seq: 0, data: [1, 2, 3]), from: "alice", now: t0).isEmpty)
        #expect(try machine.receive(report: contReport(0x5555, seq: 3), from: "bob", now: t0).isEmpty)
        #expect(try machine.receive(report: contReport(broadcast, seq: 0), from: "bob", now: t0).isEmpty)
        #expect(!machine.isBusy)
    }

    @Test func continuationFromAnotherChannelDoesNotDisturbReassembly() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        let payload = Array(repeating: UInt8(0x77), count: 100)
        let reports = hostReports(alice, ping, payload)
        #expect(try machine.receive(report: reports[0], from: "alice", now: t0).isEmpty)
        #expect(try machine.receive(report: contReport(bob, seq: 0, data: [9, 9]), from: "bob", now: t0).isEmpty)
        let actions = try machine.receive(report: reports[1], from: "alice", now: t0)
        #expect(replies(actions) == [Reply(peer: "alice", cid: alice, command: ping, payload: payload)])
    }

    @Test(arguments: [ping, cbor, wink, cancel, 0x50])
    func newInitializationPacketDuringReassemblyIsInvalidSeq(command: UInt8) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        #expect(
            try machine.receive(
                report: initReport(cid, ping, length: 100, data: Array(repeating: 1, count: 57)), from: "alice", now: t0
            ).isEmpty)
        let actions = try machine.receive(report: initReport(cid, command, [1]), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(cid, 0x04)])
        #expect(!machine.isBusy)
    }

    @Test func slowMessageTimesOutOnTick() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let reports = hostReports(cid, ping, Array(repeating: 1, count: 200))
        #expect(try feed(&machine, [reports[0], reports[1]], now: at(0)).isEmpty)
        #expect(machine.tick(now: at(499)).isEmpty)
        #expect(replies(machine.tick(now: at(500))) == [errorReply(cid, 0x05)])
        #expect(!machine.isBusy)
        #expect(machine.tick(now: at(600)).isEmpty)
        #expect(try machine.receive(report: reports[2], from: "alice", now: at(601)).isEmpty)
    }

    @Test func timeoutIsMeasuredFromTheLatestPacket() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let reports = hostReports(cid, ping, Array(repeating: 1, count: 300))
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        #expect(try machine.receive(report: reports[1], from: "alice", now: at(300)).isEmpty)
        #expect(try machine.receive(report: reports[2], from: "alice", now: at(750)).isEmpty)
        #expect(machine.tick(now: at(1200)).isEmpty)
        #expect(replies(machine.tick(now: at(1250))) == [errorReply(cid, 0x05)])
    }

    @Test func lateContinuationGetsTimeoutInsteadOfBeingAppended() throws {
        var configuration = Machine.Configuration()
        configuration.transactionTimeout = .milliseconds(200)
        var machine = Machine(configuration: configuration)
        let cid = try allocate(&machine)
        let reports = hostReports(cid, ping, Array(repeating: 1, count: 100))
        #expect(try machine.receive(report: reports[0], from: "alice", now: at(0)).isEmpty)
        let actions = try machine.receive(report: reports[1], from: "alice", now: at(250))
        #expect(replies(actions) == [errorReply(cid, 0x05)])
        #expect(!machine.isBusy)
    }

    @Test func timeoutErrorGoesToTheOriginalSender() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        #expect(
            try machine.receive(report: initReport(alice, ping, length: 100, data: []), from: "alice", now: at(0))
                .isEmpty)
        // Bob's packet arrives after Alice's deadline: Alice gets her timeout, Bob his answer.
        let actions = try machine.receive(report: initReport(bob, ping, [2]), from: "bob", now: at(600))
        #expect(
            replies(actions) == [errorReply(alice, 0x05), Reply(peer: "bob", cid: bob, command: ping, payload: [2])])
    }

    @Test(arguments: [0x00, 0x02, 0x05, 0x07, 0x09, 0x0F, 0x12, 0x3B, 0x3F, 0x40, 0x7F] as [UInt8])
    func unknownOrHostForbiddenCommandIsInvalidCommand(command: UInt8) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let actions = try machine.receive(
            report: initReport(cid, command, length: 1000, data: []), from: "alice", now: t0)
        #expect(replies(actions) == [errorReply(cid, 0x01)])
        #expect(!machine.isBusy)
    }

    @Test(arguments: [0, 1, 63, 65, 128] as [Int])
    func wrongReportSizeThrowsAndChangesNothing(size: Int) throws {
        var machine = Machine(channelIDSource: ScriptedChannelIDs([1, 2]))
        let report =
            Array(initReport(broadcast, hidInit, [1, 2, 3, 4, 5, 6, 7, 8]).prefix(size))
            + Array(repeating: 0, count: max(0, size - 64))
        #expect(throws: CTAPHIDFramingError.wrongReportSize(size)) {
            try machine.receive(report: report, from: "alice", now: t0)
        }
        #expect(machine.allocatedChannels.isEmpty)
        #expect(try allocate(&machine) == 1)
    }

    @Test func winkAsksForWinkAndAnswersEmpty() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let actions = try machine.receive(report: initReport(cid, wink, []), from: "alice", now: t0)
        #expect(actions.first == .wink(ChannelID(rawValue: cid)))
        #expect(replies(actions) == [Reply(peer: "alice", cid: cid, command: wink, payload: [])])
        #expect(
            replies(try machine.receive(report: initReport(cid, wink, [1]), from: "alice", now: t0)) == [
                errorReply(cid, 0x03)
            ])
    }
}
