import CTAPHID
import Testing

struct CBORTransactionTests {
    @Test func multiPacketRequestIsDispatchedAndResponseFragmented() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let request = [0x01] + (0..<1500).map { UInt8(truncatingIfNeeded: $0) }
        let actions = try feed(&machine, hostReports(cid, cbor, request))
        let (transaction, dispatchedRequest) = try #require(dispatched(actions))
        #expect(actions.count == 1)
        #expect(dispatchedRequest == request)
        #expect(transaction.channel == ChannelID(rawValue: cid))
        #expect(machine.isBusy)

        let response = [0x00] + (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let out = machine.cborResponse(response, for: transaction, now: at(50))
        #expect(out.count == 1 + (3001 - 57 + 58) / 59)
        #expect(replies(out) == [Reply(peer: "alice", cid: cid, command: cbor, payload: response)])
        #expect(!machine.isBusy)
    }

    @Test func responseGoesToThePeerThatSentTheRequest() throws {
        var machine = Machine()
        let cid = try allocate(&machine, from: "alice")
        let (transaction, _) = try #require(
            dispatched(try feed(&machine, [initReport(cid, cbor, [4])], from: "alice-new-port")))
        #expect(replies(machine.tick(now: at(100))).map(\.peer) == ["alice-new-port"])
        #expect(replies(machine.cborResponse([0], for: transaction, now: at(120))).map(\.peer) == ["alice-new-port"])
    }

    @Test func emptyCBORRequestIsInvalidLength() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        #expect(
            replies(try machine.receive(report: initReport(cid, cbor, []), from: "alice", now: t0)) == [
                errorReply(cid, 0x03)
            ])
        #expect(!machine.isBusy)
    }

    @Test(arguments: [0, 7610, 10_000])
    func unframeableResponseBecomesErrorOther(length: Int) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [4]), from: "alice", now: t0)))
        #expect(
            replies(machine.cborResponse(Array(repeating: 0, count: length), for: transaction, now: at(1))) == [
                errorReply(cid, 0x7F)
            ])
        #expect(!machine.isBusy)
    }

    @Test func maximumLengthResponseIsFramed() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [4]), from: "alice", now: t0)))
        let response = Array(repeating: UInt8(0x5A), count: 7609)
        let out = machine.cborResponse(response, for: transaction, now: at(1))
        #expect(out.count == 129)
        #expect(replies(out) == [Reply(peer: "alice", cid: cid, command: cbor, payload: response)])
    }

    @Test func responseForUnknownTransactionIsDropped() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [4]), from: "alice", now: t0)))
        #expect(!machine.cborResponse([0], for: transaction, now: at(1)).isEmpty)
        #expect(machine.cborResponse([0], for: transaction, now: at(2)).isEmpty)
        #expect(machine.keepaliveStatus(.userPresenceNeeded, for: transaction, now: at(3)).isEmpty)
    }

    @Test func keepalivesFollowTheIntervalAndTheStatus() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: at(0))))
        let processing = Reply(peer: "alice", cid: cid, command: keepalive, payload: [1])
        let upNeeded = Reply(peer: "alice", cid: cid, command: keepalive, payload: [2])

        #expect(machine.tick(now: at(50)).isEmpty)
        #expect(machine.tick(now: at(99)).isEmpty)
        #expect(replies(machine.tick(now: at(100))) == [processing])
        #expect(machine.tick(now: at(150)).isEmpty)
        #expect(replies(machine.tick(now: at(210))) == [processing])
        // The keepalive report is exactly CID | 0xBB | 00 01 | status.
        let report = machine.tick(now: at(310))
        #expect(
            report == [
                .send(report: bigEndian(cid) + [0xBB, 0x00, 0x01, 0x01] + Array(repeating: 0, count: 56), to: "alice")
            ])

        // A change of status is announced at once, and restarts the interval.
        #expect(replies(machine.keepaliveStatus(.userPresenceNeeded, for: transaction, now: at(330))) == [upNeeded])
        #expect(machine.keepaliveStatus(.userPresenceNeeded, for: transaction, now: at(340)).isEmpty)
        #expect(machine.tick(now: at(410)).isEmpty)
        #expect(replies(machine.tick(now: at(430))) == [upNeeded])
        #expect(replies(machine.keepaliveStatus(.processing, for: transaction, now: at(440))) == [processing])

        _ = machine.cborResponse([0], for: transaction, now: at(450))
        #expect(machine.tick(now: at(1000)).isEmpty)
    }

    @Test func keepaliveStatusStartsAsProcessingForEachRequest() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (first, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: at(0))))
        _ = machine.keepaliveStatus(.userPresenceNeeded, for: first, now: at(10))
        _ = machine.cborResponse([0], for: first, now: at(20))
        _ = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: at(30))))
        #expect(replies(machine.tick(now: at(130))).map(\.payload) == [[1]])
    }

    @Test func cancelOnTheBusyChannelCancelsAndIsNotAnswered() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: t0)))
        #expect(
            try machine.receive(report: initReport(cid, cancel, []), from: "alice", now: at(10)) == [
                .cancel(transaction)
            ])
        #expect(try machine.receive(report: initReport(cid, cancel, []), from: "alice", now: at(20)).isEmpty)
        // Keepalives continue until the authenticator answers.
        #expect(replies(machine.tick(now: at(100))).map(\.command) == [keepalive])
        let out = machine.cborResponse([0x2D], for: transaction, now: at(120))
        #expect(replies(out) == [Reply(peer: "alice", cid: cid, command: cbor, payload: [0x2D])])
    }

    /// uhid's UHID_CLOSE (the last reader closed the hidraw node): the running request is cancelled once, nothing is
    /// sent, and with nothing running nothing happens.
    @Test func theHostClosingTheDeviceCancelsTheRunningRequestOnce() throws {
        var machine = Machine()
        #expect(machine.hostClosed(now: t0).isEmpty)
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: t0)))
        #expect(machine.hostClosed(now: at(10)) == [.cancel(transaction)])
        #expect(machine.hostClosed(now: at(20)).isEmpty)
        #expect(try machine.receive(report: initReport(cid, cancel, []), from: "alice", now: at(30)).isEmpty)
        let out = machine.cborResponse([0x2D], for: transaction, now: at(40))
        #expect(replies(out) == [Reply(peer: "alice", cid: cid, command: cbor, payload: [0x2D])])
        #expect(machine.hostClosed(now: at(50)).isEmpty)
    }

    @Test func cancelWithNothingPendingIsIgnored() throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        #expect(try machine.receive(report: initReport(cid, cancel, []), from: "alice", now: t0).isEmpty)
        #expect(
            try machine.receive(report: initReport(cid, cancel, length: 500, data: []), from: "alice", now: t0).isEmpty)
        #expect(!machine.isBusy)
    }

    @Test func cancelFromAnotherChannelIsIgnored() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        _ = try #require(dispatched(try machine.receive(report: initReport(alice, cbor, [2]), from: "alice", now: t0)))
        #expect(try machine.receive(report: initReport(bob, cancel, []), from: "bob", now: t0).isEmpty)
        #expect(machine.isBusy)
    }

    @Test(arguments: [ping, cbor, wink, lock, msg, hidInit])
    func otherChannelIsBusyDuringCBORProcessing(command: UInt8) throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(alice, cbor, [2]), from: "alice", now: t0)))
        let actions = try machine.receive(
            report: initReport(bob, command, [0, 0, 0, 0, 0, 0, 0, 0]), from: "bob", now: t0)
        #expect(replies(actions) == [errorReply(bob, 0x06, to: "bob")])
        #expect(replies(machine.cborResponse([0], for: transaction, now: at(1))).map(\.peer) == ["alice"])
        // Afterwards Bob is served.
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [3]), from: "bob", now: at(2))).map(\.command)
                == [ping])
    }

    @Test(arguments: [ping, cbor, wink, lock, msg])
    func otherChannelIsBusyDuringReassembly(command: UInt8) throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        let payload = Array(repeating: UInt8(3), count: 90)
        let reports = hostReports(alice, cbor, payload)
        #expect(try machine.receive(report: reports[0], from: "alice", now: t0).isEmpty)
        let actions = try machine.receive(report: initReport(bob, command, [1]), from: "bob", now: t0)
        #expect(replies(actions) == [errorReply(bob, 0x06, to: "bob")])
        #expect(dispatched(try machine.receive(report: reports[1], from: "alice", now: t0))?.1 == payload)
    }

    @Test func broadcastInitIsAnsweredWhileBusy() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let reports = hostReports(alice, ping, Array(repeating: 3, count: 90))
        #expect(try machine.receive(report: reports[0], from: "alice", now: t0).isEmpty)
        let bob = try allocate(&machine, from: "bob")
        #expect(bob != alice)
        #expect(replies(try machine.receive(report: reports[1], from: "alice", now: t0)).map(\.command) == [ping])

        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(alice, cbor, [2]), from: "alice", now: t0)))
        _ = try allocate(&machine, from: "carol")
        #expect(!machine.cborResponse([0], for: transaction, now: at(1)).isEmpty)
    }

    @Test(arguments: [ping, cbor, wink, lock, msg])
    func sameChannelIsBusyDuringCBORProcessing(command: UInt8) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(cid, cbor, [2]), from: "alice", now: t0)))
        let actions = try machine.receive(report: initReport(cid, command, [1]), from: "alice", now: at(1))
        #expect(replies(actions) == [errorReply(cid, 0x06)])
        #expect(machine.isBusy)
        #expect(try machine.receive(report: contReport(cid, seq: 0), from: "alice", now: at(2)).isEmpty)
        #expect(replies(machine.cborResponse([0], for: transaction, now: at(3))).map(\.command) == [cbor])
    }
}
