import CTAPHID
import Testing

struct LockTests {
    @Test func lockReservesTheAuthenticatorUntilItExpires() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        #expect(
            replies(try machine.receive(report: initReport(alice, lock, [2]), from: "alice", now: at(0))) == [
                Reply(peer: "alice", cid: alice, command: lock, payload: [])
            ])

        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: at(100))) == [
                errorReply(bob, 0x06, to: "bob")
            ])
        #expect(try machine.receive(report: initReport(bob, cancel, []), from: "bob", now: at(100)).isEmpty)
        #expect(
            replies(try machine.receive(report: initReport(alice, ping, [1]), from: "alice", now: at(200))).map(
                \.command) == [ping])
        // Broadcast INIT is still answered.
        _ = try allocate(&machine, from: "carol", now: at(300))
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: at(1999))) == [
                errorReply(bob, 0x06, to: "bob")
            ])
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: at(2000))).map(\.command)
                == [ping])
    }

    @Test func lockZeroReleases() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        _ = try machine.receive(report: initReport(alice, lock, [10]), from: "alice", now: at(0))
        #expect(
            replies(try machine.receive(report: initReport(alice, lock, [0]), from: "alice", now: at(10))).map(
                \.command) == [lock])
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: at(20))).map(\.command)
                == [ping])
    }

    @Test func lockHolderCanRunCBORAndOthersStayOut() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        _ = try machine.receive(report: initReport(alice, lock, [5]), from: "alice", now: at(0))
        let (transaction, _) = try #require(
            dispatched(try machine.receive(report: initReport(alice, cbor, [4]), from: "alice", now: at(1))))
        _ = machine.cborResponse([0], for: transaction, now: at(2))
        #expect(
            replies(try machine.receive(report: initReport(bob, cbor, [4]), from: "bob", now: at(3))) == [
                errorReply(bob, 0x06, to: "bob")
            ])
    }

    @Test func lockExpiryIsAlsoNoticedOnTick() throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        _ = try machine.receive(report: initReport(alice, lock, [1]), from: "alice", now: at(0))
        #expect(machine.tick(now: at(1000)).isEmpty)
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: at(1001))).map(\.command)
                == [ping])
    }

    @Test(arguments: [11, 0x80, 0xFF] as [UInt8])
    func lockLongerThanTenSecondsIsInvalidParameter(seconds: UInt8) throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let bob = try allocate(&machine, from: "bob")
        #expect(
            replies(try machine.receive(report: initReport(alice, lock, [seconds]), from: "alice", now: t0)) == [
                errorReply(alice, 0x02)
            ])
        #expect(
            replies(try machine.receive(report: initReport(bob, ping, [1]), from: "bob", now: t0)).map(\.command) == [
                ping
            ])
    }

    @Test(arguments: [0, 2, 57])
    func lockWithWrongLengthIsInvalidLength(length: Int) throws {
        var machine = Machine()
        let alice = try allocate(&machine)
        let report = initReport(alice, lock, length: length, data: Array(repeating: 1, count: length))
        #expect(replies(try machine.receive(report: report, from: "alice", now: t0)) == [errorReply(alice, 0x03)])
    }
}

struct MSGTests {
    static let answers: [(apdu: [UInt8], statusWord: [UInt8])] = [
        // U2F_VERSION, case 1 and case 2E.
        ([0x00, 0x03, 0x00, 0x00], [0x6D, 0x00]),
        ([0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00], [0x6D, 0x00]),
        // U2F_REGISTER, extended case 3 and case 4 (challenge and application: 64 bytes).
        ([0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x40] + Array(repeating: 0xAA, count: 64), [0x6D, 0x00]),
        (
            [0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x40] + Array(repeating: 0xAA, count: 64) + [0x00, 0x00], [0x6D, 0x00]
        ),
        // U2F_AUTHENTICATE, short case 3 and 4.
        ([0x00, 0x02, 0x07, 0x00, 0x03, 1, 2, 3], [0x6D, 0x00]),
        ([0x00, 0x02, 0x07, 0x00, 0x03, 1, 2, 3, 0x00], [0x6D, 0x00]),
        // Case 2S.
        ([0x00, 0xC0, 0x00, 0x00, 0x10], [0x6D, 0x00]),
        // Non-zero class byte.
        ([0x80, 0x03, 0x00, 0x00], [0x6E, 0x00]),
        ([0xFF, 0x01, 0x03, 0x00, 0x00, 0x00, 0x01, 0x42], [0x6E, 0x00]),
        // Malformed: too short, and length fields that do not add up.
        ([], [0x67, 0x00]),
        ([0x00, 0x01, 0x03], [0x67, 0x00]),
        ([0x80, 0x01, 0x03], [0x67, 0x00]),
        ([0x00, 0x01, 0x03, 0x00, 0x05, 1, 2], [0x67, 0x00]),
        ([0x00, 0x01, 0x03, 0x00, 0x00, 0x00], [0x67, 0x00]),
        ([0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01], [0x67, 0x00]),
        ([0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x40, 1, 2, 3], [0x67, 0x00]),
        ([0x80, 0x01, 0x03, 0x00, 0x00, 0x00, 0x40, 1, 2, 3], [0x67, 0x00]),
    ]

    @Test(arguments: answers)
    func msgIsAnsweredWithAStatusWord(apdu: [UInt8], statusWord: [UInt8]) throws {
        var machine = Machine()
        let cid = try allocate(&machine)
        let actions = try feed(&machine, hostReports(cid, msg, apdu))
        #expect(replies(actions) == [Reply(peer: "alice", cid: cid, command: msg, payload: statusWord)])
        #expect(!machine.isBusy)
    }
}
