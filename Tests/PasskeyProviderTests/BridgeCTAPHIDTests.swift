import CTAP2
import CTAPHID
import PasskeyProvider
import Synchronization
import TestSupport
import Testing

/// The phone behind the key as the browser sees it over CTAPHID: the state machine on a test clock, the bridge as its
/// CBOR handler, and a scripted phone. The keepalives the host receives follow the phone's steps every 100 ms of the
/// test clock, and the host's CTAPHID_CANCEL ends the phone's session and is answered KEEPALIVE_CANCEL.
@Suite(.timeLimit(.minutes(1)))
struct BridgeCTAPHIDTests {
    typealias Machine = CTAPHIDStateMachine<String>

    let start = ContinuousClock.now
    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    /// An initialization report of a host: channel, command, length and up to 57 bytes of data.
    static func report(_ channel: UInt32, _ command: UInt8, _ data: [UInt8]) -> [UInt8] {
        var report = withUnsafeBytes(of: channel.bigEndian) { Array($0) }
        report += [0x80 | command, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data.prefix(57)
        return report + [UInt8](repeating: 0, count: 64 - report.count)
    }

    /// The (command, first payload byte) of each report the machine sends: keepalives carry their status there, a
    /// CBOR response its status byte.
    static func sent(_ actions: [Machine.Action]) -> [(command: UInt8, first: UInt8)] {
        actions.compactMap { action in
            guard case .send(let report, _) = action, report.count == 64 else { return nil }
            return (report[4] & 0x7F, report[7])
        }
    }

    @Test func keepalivesFollowThePhoneAndACancelEndsItWithKeepaliveCancel() async throws {
        let directory = try TemporaryDirectory()
        let phones = SecurityKeyBridgeTests.Phones(qrWaits: true)
        let bridge = try SecurityKeyBridgeTests.bridge(directory, mode: .phoneOnly, phones: phones)
        var machine = Machine()

        // INIT on the broadcast channel gives the host its channel.
        let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let initReply = try machine.receive(report: Self.report(0xFFFF_FFFF, 0x06, nonce), from: "host", now: at(0))
        guard case .send(let reply, _)? = initReply.first else {
            Issue.record("INIT was not answered: \(initReply)")
            return
        }
        let channel = reply[15..<19].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }

        // A sign-in the key's store cannot answer: dispatched to the bridge, which goes to a phone.
        let request = SecurityKeyBridgeTests.getAssertion()
        let dispatched = try machine.receive(report: Self.report(channel, 0x10, request), from: "host", now: at(10))
        guard case .dispatchCBOR(let transaction, let forwarded)? = dispatched.first else {
            Issue.record("the CBOR request was not dispatched: \(dispatched)")
            return
        }
        #expect(forwarded == request)
        let (statuses, statusSink) = AsyncStream.makeStream(of: KeepaliveStatus.self)
        let answering = Task { await bridge.answer(forwarded, keepalive: { statusSink.yield($0) }) }
        var phoneStatuses = statuses.makeAsyncIterator()

        // Before any status: PROCESSING at the first 100 ms, as for every request.
        #expect(Self.sent(machine.tick(now: at(60))).isEmpty)
        #expect(Self.sent(machine.tick(now: at(110))).map(\.first) == [0x01])

        // The QR code is up: UPNEEDED at once, and again at every 100 ms of the clock.
        #expect(await phoneStatuses.next() == .userPresenceNeeded)
        let upNeeded = Self.sent(machine.keepaliveStatus(.userPresenceNeeded, for: transaction, now: at(150)))
        #expect(upNeeded.map(\.command) == [0x3B] && upNeeded.map(\.first) == [0x02])
        for time in [250, 350, 450] {
            #expect(Self.sent(machine.tick(now: at(time))).map(\.first) == [0x02], "at \(time) ms")
        }
        #expect(Self.sent(machine.tick(now: at(500))).isEmpty)

        // The phone's advert is heard: PROCESSING, kept up while the phone works.
        var next = await phoneStatuses.next()
        while next == .userPresenceNeeded { next = await phoneStatuses.next() }
        #expect(next == .processing)
        #expect(Self.sent(machine.keepaliveStatus(.processing, for: transaction, now: at(520))).map(\.first) == [0x01])
        #expect(Self.sent(machine.tick(now: at(620))).map(\.first) == [0x01])

        // The host gives up: CTAPHID_CANCEL cancels the request; the phone's session ends; the answer is
        // KEEPALIVE_CANCEL (0x2D), sent as the transaction's response, and no keepalive follows.
        var waiting = try #require(phones.made.withLock { $0.first }).waiting.makeAsyncIterator()
        await waiting.next()
        let cancel = try machine.receive(report: Self.report(channel, 0x11, []), from: "host", now: at(650))
        #expect(cancel.contains(.cancel(transaction)))
        answering.cancel()
        let answer = await answering.value
        #expect(answer == [CTAPError.keepaliveCancel.rawValue])
        let response = Self.sent(machine.cborResponse(answer, for: transaction, now: at(660)))
        #expect(response.map(\.command) == [0x10] && response.map(\.first) == [0x2D])
        #expect(Self.sent(machine.tick(now: at(800))).isEmpty)
        statusSink.finish()
    }
}
