import Relay
import Testing

/// One relay connection's life without NIO: events in, actions out.
struct RelayConnectionStateMachineTests {
    typealias Machine = RelayConnectionStateMachine<[UInt8]>

    /// A machine whose WebSocket is open.
    static func open(maximumOverheadFrames: Int = 1024) -> Machine {
        var machine = Machine(maximumOverheadFrames: maximumOverheadFrames)
        machine.upgradeAccepted()
        _ = machine.upgradeCompleted()
        return machine
    }

    @Test func theUpgradeJoinsTheTunnelThenWritesWhatArrivedMeanwhileThenCloses() {
        var machine = Machine(maximumOverheadFrames: 10)
        #expect(machine.phase == .http)
        machine.upgradeAccepted()
        #expect(machine.phase == .upgrading)
        #expect(machine.deliver([1]) == nil)
        #expect(machine.deliver([2, 2]) == nil)
        #expect(machine.close(code: 1001) == nil)
        #expect(
            machine.upgradeCompleted() == [
                .cancelRequestTimer, .joinTunnel, .write([1], scheduleFlush: true),
                .write([2, 2], scheduleFlush: false),
                .sendClose(code: 1001),
            ])
        #expect(machine.phase == .closing)
        #expect(machine.deliver([3]) == nil)
        #expect(machine.close(code: 1000) == nil)
    }

    @Test func anUpgradeWithNothingWaitingOnlyJoins() {
        var machine = Machine(maximumOverheadFrames: 10)
        machine.upgradeAccepted()
        #expect(machine.upgradeCompleted() == [.cancelRequestTimer, .joinTunnel])
        #expect(machine.phase == .open && machine.isReadingFrames)
    }

    @Test func writesAreFlushedOncePerBatch() {
        var machine = Self.open()
        #expect(machine.deliver([1]) == .write([1], scheduleFlush: true))
        #expect(machine.deliver([2]) == .write([2], scheduleFlush: false))
        #expect(machine.deliver([3]) == .write([3], scheduleFlush: false))
        #expect(machine.flushTurn() == .flush)
        #expect(machine.deliver([4]) == .write([4], scheduleFlush: true))
    }

    @Test func theRequestTimerClosesAConnectionThatIsNotUpgraded() {
        var http = Machine(maximumOverheadFrames: 10)
        #expect(http.requestTimerFired() == [.countRequestTimeout, .closeConnection])
        #expect(http.phase == .closing)
        #expect(http.requestTimerFired().isEmpty)

        // An accepted upgrade whose request body never ends is never upgraded: closed too.
        var upgrading = Machine(maximumOverheadFrames: 10)
        upgrading.upgradeAccepted()
        _ = upgrading.deliver([1])
        #expect(upgrading.requestTimerFired() == [.countRequestTimeout, .closeConnection])
        // The pipeline that comes too late neither joins nor writes.
        #expect(upgrading.upgradeCompleted() == [.cancelRequestTimer])

        var open = Self.open()
        #expect(open.requestTimerFired().isEmpty)
        #expect(open.phase == .open)
    }

    @Test func aMalformedRequestIsCountedOnceAndNotAfterTheTimer() {
        var machine = Machine(maximumOverheadFrames: 10)
        #expect(machine.requestMalformed() == [.countMalformedRequest, .closeConnection])
        #expect(machine.requestMalformed().isEmpty)
        #expect(machine.requestTimerFired().isEmpty)

        // The timer closed it: the parser's complaint about the unfinished request is not a second refusal.
        var cutOff = Machine(maximumOverheadFrames: 10)
        _ = cutOff.requestTimerFired()
        #expect(cutOff.requestMalformed().isEmpty)
        var open = Self.open()
        #expect(open.requestMalformed().isEmpty)
        #expect(open.phase == .open)
    }

    @Test func anAnsweredRequestIsNotATimeoutLater() {
        var machine = Machine(maximumOverheadFrames: 10)
        #expect(machine.requestAnswered() == .cancelRequestTimer)
        #expect(machine.phase == .closing)
        #expect(machine.requestTimerFired().isEmpty)
        machine.upgradeAccepted()
        #expect(machine.phase == .closing)
    }

    @Test func closingBeforeTheUpgradeClosesTheConnectionWithoutAFrame() {
        var machine = Machine(maximumOverheadFrames: 10)
        #expect(machine.deliver([1]) == nil)
        #expect(machine.close(code: 1008) == .closeConnection)
        #expect(machine.close(code: 1008) == nil)
    }

    @Test func onlyTheLatestPendingPingIsAnsweredAndOnlyWhenWritable() {
        var machine = Self.open()
        #expect(machine.frameReceived(.ping([1]), isOverhead: true) == .schedulePong)
        #expect(machine.frameReceived(.ping([2]), isOverhead: true) == nil)
        #expect(machine.pongTurn(writable: false) == nil)
        #expect(machine.frameReceived(.ping([3]), isOverhead: true) == nil)
        #expect(machine.pongTurn(writable: true) == .sendPong([3]))
        #expect(machine.pongTurn(writable: true) == nil)
        #expect(machine.frameReceived(.ping([4]), isOverhead: true) == .schedulePong)
        // A pong pending when the connection closes is dropped.
        _ = machine.close(code: 1000)
        #expect(machine.pongTurn(writable: true) == nil)
    }

    @Test func aSideThatStopsReadingPausesItsPeerUntilItReadsAgain() {
        var machine = Self.open()
        #expect(machine.writabilityChanged(writable: false) == [.pausePeer, .armStallTimer])
        #expect(machine.writabilityChanged(writable: false) == [])
        #expect(machine.frameReceived(.ping([1]), isOverhead: true) == .schedulePong)
        #expect(machine.pongTurn(writable: false) == nil)
        // Writable again: the peer resumes, the timer stops, and the held pong goes out.
        #expect(machine.writabilityChanged(writable: true) == [.resumePeer, .cancelStallTimer, .sendPong([1])])
        #expect(machine.writabilityChanged(writable: true) == [])
        #expect(machine.stallTimerFired() == nil)
    }

    @Test func aSideStillNotReadingWhenTheStallTimerFiresEndsTheTunnel() {
        var machine = Self.open()
        _ = machine.writabilityChanged(writable: false)
        #expect(machine.stallTimerFired() == .fail(.peerNotReading, code: 1008))
        #expect(machine.stallTimerFired() == nil)
        #expect(!machine.isReadingFrames)
    }

    @Test func writabilityBeforeTheUpgradeOrWhileClosingPausesNothing() {
        var upgrading = RelayConnectionStateMachine<[UInt8]>(maximumOverheadFrames: 4)
        upgrading.upgradeAccepted()
        #expect(upgrading.writabilityChanged(writable: false) == [])
        #expect(upgrading.stallTimerFired() == nil)
        var closing = Self.open()
        _ = closing.close(code: 1000)
        #expect(closing.writabilityChanged(writable: false) == [])
        #expect(closing.stallTimerFired() == nil)
    }

    @Test func pongsAndFragmentsAreOverheadOnly() {
        var machine = Self.open()
        #expect(machine.frameReceived(.pong, isOverhead: true) == nil)
        #expect(machine.frameReceived(.fragment, isOverhead: true) == nil)
        #expect(machine.frameReceived(.message([1, 2]), isOverhead: true) == .relay([1, 2]))
    }

    @Test func theOverheadBudgetFailsTheConnectionAtTheFrameAfterIt() {
        var machine = Self.open(maximumOverheadFrames: 3)
        for _ in 0..<3 { #expect(machine.frameReceived(.pong, isOverhead: true) == nil) }
        // Whole messages are free.
        for index in 0..<10 as Range<UInt8> {
            #expect(machine.frameReceived(.message([index]), isOverhead: false) == .relay([index]))
        }
        #expect(machine.frameReceived(.pong, isOverhead: true) == .fail(.tooManyOverheadFrames, code: 1008))
        #expect(!machine.isReadingFrames)
        // Nothing more is read; the registry's close still goes out.
        #expect(machine.frameReceived(.message([1]), isOverhead: false) == nil)
        #expect(machine.frameReceived(.ping([1]), isOverhead: true) == nil)
        #expect(machine.close(code: 1008) == .sendClose(code: 1008))
    }

    @Test func aCloseFrameIsEchoedAndEndsReading() {
        var machine = Self.open()
        #expect(machine.frameReceived(.close(code: 4000), isOverhead: false) == .answerClose(code: 4000))
        #expect(machine.phase == .closing && !machine.isReadingFrames)
        #expect(machine.frameReceived(.message([1]), isOverhead: false) == nil)
        #expect(machine.deliver([1]) == nil)
        #expect(machine.close(code: 1000) == nil)

        var codeless = Self.open()
        #expect(codeless.frameReceived(.close(code: nil), isOverhead: false) == .answerClose(code: nil))
        // An answered close waits for nothing.
        #expect(machine.closeReplyReceived() == nil)
    }

    @Test func aCloseTheRelayStartsWaitsForThePeersAnswer() {
        var machine = Self.open()
        #expect(machine.closeReplyReceived() == nil)
        #expect(machine.close(code: 4410) == .sendClose(code: 4410))
        #expect(machine.closeReplyReceived() == .closeConnection)
        #expect(machine.closeReplyReceived() == nil)
        // A close held during the upgrade waits for the answer too.
        var upgrading = Machine(maximumOverheadFrames: 4)
        upgrading.upgradeAccepted()
        #expect(upgrading.close(code: 1001) == nil)
        #expect(upgrading.upgradeCompleted().last == .sendClose(code: 1001))
        #expect(upgrading.closeReplyReceived() == .closeConnection)
    }

    @Test(arguments: [
        (TunnelOutcome.protocolError, UInt16(1002)), (.textFrame, 1003), (.messageTooLarge, 1009),
    ])
    func aBrokenRuleIsReportedOnce(outcome: TunnelOutcome, code: UInt16) {
        var machine = Self.open()
        #expect(
            machine.frameReceived(.violation(outcome, code: code), isOverhead: false) == .fail(outcome, code: code))
        #expect(machine.frameReceived(.violation(.protocolError, code: 1002), isOverhead: false) == nil)
        #expect(machine.frameReceived(.close(code: 1000), isOverhead: false) == nil)
        #expect(machine.close(code: code) == .sendClose(code: code))
    }

    @Test func framesBeforeTheUpgradeAreIgnored() {
        var machine = Machine(maximumOverheadFrames: 0)
        #expect(machine.frameReceived(.message([1]), isOverhead: false) == nil)
        machine.upgradeAccepted()
        #expect(machine.frameReceived(.ping([1]), isOverhead: true) == nil)
        #expect(!machine.isReadingFrames)
    }
}
