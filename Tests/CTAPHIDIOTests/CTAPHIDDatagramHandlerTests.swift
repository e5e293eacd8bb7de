import CTAPHID
import Logging
import NIOCore
import NIOEmbedded
import TestSupport
import Testing

@testable import CTAPHIDIO

/// A ``CTAPHIDDatagramHandler`` in an `EmbeddedChannel`: datagrams go in from chosen peers, the datagrams it writes
/// come out, and its clock is the embedded event loop's, moved with `advanceTime`. No sockets, no waiting.
///
/// Only commands answered on the event loop are sent here; CBOR requests run in tasks, which report back from other
/// threads, so they are tested on `NIOAsyncTestingChannel` (``CTAPHIDDatagramHandlerCBORTests``).
struct EmbeddedUDPAuthenticator {
    let loop = EmbeddedEventLoop()
    let channel: EmbeddedChannel

    init(configuration: CTAPHIDUDPServer.Configuration = CTAPHIDUDPServer.Configuration(), wink: WinkHandler? = nil)
        throws
    {
        let handler = CTAPHIDDatagramHandler(
            configuration: configuration, logger: quietLogger, wink: wink,
            handler: { _, _ in [0x01] }, now: clock(following: loop))
        channel = EmbeddedChannel(handler: handler, loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8111)).wait()
    }

    func send(datagram: [UInt8], from peer: SocketAddress) throws {
        try channel.writeInbound(AddressedEnvelope(remoteAddress: peer, data: ByteBuffer(bytes: datagram)))
    }

    /// Sends every report of a message, one datagram each.
    func send(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8], from peer: SocketAddress) throws {
        for report in hostReports(cid, command, payload) { try send(datagram: report, from: peer) }
    }

    /// Every datagram written since the last call, with its destination.
    func written() throws -> [(peer: SocketAddress, report: [UInt8])] {
        var datagrams: [(peer: SocketAddress, report: [UInt8])] = []
        while let envelope = try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
            datagrams.append((envelope.remoteAddress, Array(buffer: envelope.data)))
        }
        return datagrams
    }

    /// The messages written since the last call.
    func replies(sourceLocation: SourceLocation = #_sourceLocation) throws -> [Reply<SocketAddress>] {
        reassemble(try written(), sourceLocation: sourceLocation)
    }

    /// Allocates a channel for `peer` with a broadcast INIT, checking the response.
    func initialize(from peer: SocketAddress) throws -> UInt32 {
        let nonce: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        try send(0xFFFF_FFFF, 0x06, nonce, from: peer)
        let replies = try replies()
        try #require(replies.count == 1)
        let reply = replies[0]
        try #require(reply.peer == peer && reply.channel == 0xFFFF_FFFF && reply.command == 0x06)
        try #require(reply.payload.count == 17 && Array(reply.payload.prefix(8)) == nonce)
        return reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    func advanceTime(by amount: TimeAmount) { loop.advanceTime(by: amount) }
}

/// The sockets the embedded handler hears from. Each is another port on the same address: another peer.
enum Peers {
    static let alice = try! SocketAddress(ipAddress: "127.0.0.1", port: 40001)
    static let bob = try! SocketAddress(ipAddress: "127.0.0.1", port: 40002)
    static let mallory = try! SocketAddress(ipAddress: "127.0.0.1", port: 40003)
}

struct CTAPHIDDatagramHandlerTests {
    @Test func initAnswersItsSenderWithANewChannel() throws {
        let udp = try EmbeddedUDPAuthenticator()
        try udp.send(datagram: hostReports(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])[0], from: Peers.alice)
        let written = try udp.written()
        try #require(written.count == 1)
        #expect(written[0].peer == Peers.alice)
        #expect(written[0].report.count == 64)
        let reply = try #require(reassemble(written).first)
        #expect(reply.channel == 0xFFFF_FFFF && reply.command == 0x06)
        #expect(Array(reply.payload.prefix(8)) == [1, 2, 3, 4, 5, 6, 7, 8])
        let cid = reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(cid != 0 && cid != 0xFFFF_FFFF)
        #expect(reply.payload[12] == 2)  // CTAPHID protocol version
        #expect(reply.payload[16] == 0x0D)  // WINK | CBOR | NMSG
    }

    @Test func aPingInSeveralDatagramsIsEchoedOnceComplete() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let reports = hostReports(cid, 0x01, payload)
        #expect(reports.count == 4)
        for report in reports.dropLast() {
            try udp.send(datagram: report, from: Peers.alice)
            #expect(try udp.written().isEmpty, "nothing is answered before the message is complete")
        }
        try udp.send(datagram: reports.last!, from: Peers.alice)
        let written = try udp.written()
        #expect(written.map(\.report) == reports)
        #expect(written.allSatisfy { $0.peer == Peers.alice })
    }

    @Test func theLongestPingIsEchoedByteForByte() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let sent = hostReports(cid, 0x01, payload)
        #expect(sent.count == 129)
        for report in sent { try udp.send(datagram: report, from: Peers.alice) }
        let echoed = try udp.written()
        #expect(echoed.map(\.report) == sent)
        #expect(echoed.allSatisfy { $0.peer == Peers.alice })
    }

    @Test func aContinuationOutOfSequenceEndsTheMessage() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let reports = hostReports(cid, 0x01, Array(repeating: 0x42, count: 200))
        try udp.send(datagram: reports[0], from: Peers.alice)
        try udp.send(datagram: reports[2], from: Peers.alice)  // sequence 1 where 0 is due
        #expect(try udp.replies() == [errorReply(0x04, channel: cid, to: Peers.alice)])
        try udp.send(datagram: reports[1], from: Peers.alice)  // the message is gone: ignored
        #expect(try udp.written().isEmpty)
        try udp.send(cid, 0x01, [9], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x01, payload: [9])])
    }

    @Test func datagramsThatAreNotOneReportAreDropped() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let initReport = hostReports(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])[0]
        let padded = initReport + Array(repeating: 0, count: 4096)
        for size in [0, 1, 7, 63, 65, 128, 1000, 4096] {
            try udp.send(datagram: Array(padded.prefix(size)), from: Peers.alice)
        }
        #expect(try udp.written().isEmpty)

        // A datagram of the wrong size in the middle of a message leaves the message as it was.
        let cid = try udp.initialize(from: Peers.alice)
        let payload = (0..<100).map { UInt8($0) }
        let reports = hostReports(cid, 0x01, payload)
        try udp.send(datagram: reports[0], from: Peers.alice)
        try udp.send(datagram: reports[1] + [0], from: Peers.alice)
        try udp.send(datagram: Array(reports[1].prefix(63)), from: Peers.alice)
        #expect(try udp.written().isEmpty)
        try udp.send(datagram: reports[1], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x01, payload: payload)])
    }

    @Test func eachPeerGetsItsOwnChannelAndItsOwnReplies() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let aliceChannel = try udp.initialize(from: Peers.alice)
        let bobChannel = try udp.initialize(from: Peers.bob)
        #expect(aliceChannel != bobChannel)
        try udp.send(aliceChannel, 0x01, [0xAA], from: Peers.alice)
        try udp.send(bobChannel, 0x01, [0xBB], from: Peers.bob)
        #expect(
            try udp.replies() == [
                Reply(peer: Peers.alice, channel: aliceChannel, command: 0x01, payload: [0xAA]),
                Reply(peer: Peers.bob, channel: bobChannel, command: 0x01, payload: [0xBB]),
            ])
        // A reply goes to whoever sent the request, even on a channel another peer allocated.
        try udp.send(aliceChannel, 0x01, [0xCC], from: Peers.bob)
        #expect(try udp.replies() == [Reply(peer: Peers.bob, channel: aliceChannel, command: 0x01, payload: [0xCC])])
    }

    @Test func anotherPeerCannotSpliceIntoAMessage() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let payload = (0..<150).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let reports = hostReports(cid, 0x01, payload)
        try udp.send(datagram: reports[0], from: Peers.alice)

        // Mallory, on Alice's channel: her initialization packets are busy, her continuation packets ignored.
        try udp.send(cid, 0x01, [0x66], from: Peers.mallory)
        try udp.send(cid, 0x06, [1, 2, 3, 4, 5, 6, 7, 8], from: Peers.mallory)
        try udp.send(cid, 0x11, [], from: Peers.mallory)  // CANCEL: not even a busy answer
        try udp.send(datagram: bigEndian(cid) + [0] + Array(repeating: 0x66, count: 59), from: Peers.mallory)
        #expect(
            try udp.replies() == [
                errorReply(0x06, channel: cid, to: Peers.mallory), errorReply(0x06, channel: cid, to: Peers.mallory),
            ])

        for report in reports.dropFirst() { try udp.send(datagram: report, from: Peers.alice) }
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x01, payload: payload)])
    }

    @Test func otherChannelsAreBusyWhileAMessageIsReassembled() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let aliceChannel = try udp.initialize(from: Peers.alice)
        let bobChannel = try udp.initialize(from: Peers.bob)
        let reports = hostReports(aliceChannel, 0x01, Array(repeating: 7, count: 100))
        try udp.send(datagram: reports[0], from: Peers.alice)
        try udp.send(bobChannel, 0x01, [0x42], from: Peers.bob)
        try udp.send(bobChannel, 0x11, [], from: Peers.bob)
        #expect(try udp.replies() == [errorReply(0x06, channel: bobChannel, to: Peers.bob)])
        // A broadcast INIT is always answered.
        #expect(try udp.initialize(from: Peers.bob) != bobChannel)
        try udp.send(datagram: reports[1], from: Peers.alice)
        #expect(
            try udp.replies() == [
                Reply(peer: Peers.alice, channel: aliceChannel, command: 0x01, payload: Array(repeating: 7, count: 100))
            ])
        try udp.send(bobChannel, 0x01, [0x42], from: Peers.bob)
        #expect(try udp.replies() == [Reply(peer: Peers.bob, channel: bobChannel, command: 0x01, payload: [0x42])])
    }

    @Test func aMissingContinuationTimesOutAfter500Milliseconds() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let reports = hostReports(cid, 0x01, Array(repeating: 1, count: 100))
        try udp.send(datagram: reports[0], from: Peers.alice)
        udp.advanceTime(by: .milliseconds(450))
        #expect(try udp.written().isEmpty)
        udp.advanceTime(by: .milliseconds(50))
        #expect(try udp.replies() == [errorReply(0x05, channel: cid, to: Peers.alice)])
        udp.advanceTime(by: .seconds(5))
        #expect(try udp.written().isEmpty, "the timeout is reported once")
        try udp.send(datagram: reports[1], from: Peers.alice)  // too late: ignored
        #expect(try udp.written().isEmpty)
        try udp.send(cid, 0x01, [3], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x01, payload: [3])])
    }

    @Test func aMessageFedSlowlyTimesOutThreeSecondsAfterItsFirstPacket() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        let reports = hostReports(cid, 0x01, Array(repeating: 2, count: 7609))
        try udp.send(datagram: reports[0], from: Peers.alice)
        // One packet every 400 ms, each inside the 500 ms gap, for 2.8 s.
        for report in reports[1...7] {
            udp.advanceTime(by: .milliseconds(400))
            try udp.send(datagram: report, from: Peers.alice)
        }
        udp.advanceTime(by: .milliseconds(150))
        #expect(try udp.written().isEmpty)
        udp.advanceTime(by: .milliseconds(50))
        #expect(try udp.replies() == [errorReply(0x05, channel: cid, to: Peers.alice)])
    }

    @Test func aLockHoldsOtherChannelsOffUntilItExpires() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let aliceChannel = try udp.initialize(from: Peers.alice)
        let bobChannel = try udp.initialize(from: Peers.bob)
        try udp.send(aliceChannel, 0x04, [2], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: aliceChannel, command: 0x04, payload: [])])
        try udp.send(bobChannel, 0x01, [1], from: Peers.bob)
        try udp.send(aliceChannel, 0x01, [2], from: Peers.alice)
        #expect(
            try udp.replies() == [
                errorReply(0x06, channel: bobChannel, to: Peers.bob),
                Reply(peer: Peers.alice, channel: aliceChannel, command: 0x01, payload: [2]),
            ])
        udp.advanceTime(by: .milliseconds(1950))
        try udp.send(bobChannel, 0x01, [3], from: Peers.bob)
        #expect(try udp.replies() == [errorReply(0x06, channel: bobChannel, to: Peers.bob)])
        udp.advanceTime(by: .milliseconds(50))
        try udp.send(bobChannel, 0x01, [4], from: Peers.bob)
        #expect(try udp.replies() == [Reply(peer: Peers.bob, channel: bobChannel, command: 0x01, payload: [4])])
    }

    @Test func hostileReportsGetErrorsOnlyTheirSenderSees() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let aliceChannel = try udp.initialize(from: Peers.alice)
        let malloryChannel = try udp.initialize(from: Peers.mallory)
        try udp.send(0, 0x06, [1, 2, 3, 4, 5, 6, 7, 8], from: Peers.mallory)  // the reserved channel
        try udp.send(0xFFFF_FFFF, 0x01, [1], from: Peers.mallory)  // broadcast, not INIT
        try udp.send(0x0102_0304, 0x01, [1], from: Peers.mallory)  // never allocated
        try udp.send(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7], from: Peers.mallory)  // INIT with a 7-byte nonce
        var tooLong = hostReports(malloryChannel, 0x01, [])[0]
        (tooLong[5], tooLong[6]) = (0x1D, 0xBA)  // 7610 bytes, one more than a message can hold
        try udp.send(datagram: tooLong, from: Peers.mallory)
        try udp.send(malloryChannel, 0x3E, [], from: Peers.mallory)  // an unknown command
        try udp.send(datagram: bigEndian(malloryChannel) + [0] + Array(repeating: 0, count: 59), from: Peers.mallory)
        #expect(
            try udp.replies() == [
                errorReply(0x0B, channel: 0, to: Peers.mallory),
                errorReply(0x0B, channel: 0xFFFF_FFFF, to: Peers.mallory),
                errorReply(0x0B, channel: 0x0102_0304, to: Peers.mallory),
                errorReply(0x03, channel: 0xFFFF_FFFF, to: Peers.mallory),
                errorReply(0x03, channel: malloryChannel, to: Peers.mallory),
                errorReply(0x01, channel: malloryChannel, to: Peers.mallory),
            ])

        // Thousands of random reports: every answer is one report for Mallory, and Alice keeps her channel.
        var random = SeededRandom(seed: 0x5EED)
        for _ in 0..<3000 {
            var report = (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
            if Bool.random(using: &random) { report.replaceSubrange(0..<4, with: bigEndian(malloryChannel)) }
            if report[4] == 0x90 { report[4] = 0x81 }  // CBOR requests run in tasks: not on an embedded loop
            try udp.send(datagram: report, from: Peers.mallory)
            udp.advanceTime(by: .milliseconds(Int64.random(in: 0...20, using: &random)))
        }
        let written = try udp.written()
        #expect(!written.isEmpty)
        #expect(written.allSatisfy { $0.peer == Peers.mallory && $0.report.count == 64 })
        udp.advanceTime(by: .seconds(11))  // past any lock or message Mallory may have started
        _ = try udp.written()
        try udp.send(aliceChannel, 0x01, [0xA1], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: aliceChannel, command: 0x01, payload: [0xA1])])
    }

    @Test func winkCallsTheWinkHandler() throws {
        let winks = Shared(0)
        let udp = try EmbeddedUDPAuthenticator(wink: { winks.set(winks.get() + 1) })
        let cid = try udp.initialize(from: Peers.alice)
        try udp.send(cid, 0x08, [], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x08, payload: [])])
        #expect(winks.get() == 1)
    }

    @Test func socketErrorsAreSwallowedAndServingGoesOn() throws {
        struct ReceiveFailed: Error {}
        let udp = try EmbeddedUDPAuthenticator()
        udp.channel.pipeline.fireErrorCaught(ReceiveFailed())
        try udp.channel.throwIfErrorCaught()
        #expect(udp.channel.isActive)
        let cid = try udp.initialize(from: Peers.alice)
        try udp.send(cid, 0x01, [5], from: Peers.alice)
        #expect(try udp.replies() == [Reply(peer: Peers.alice, channel: cid, command: 0x01, payload: [5])])
    }

    @Test func anInactiveChannelStopsTheTimers() throws {
        let udp = try EmbeddedUDPAuthenticator()
        let cid = try udp.initialize(from: Peers.alice)
        try udp.send(datagram: hostReports(cid, 0x01, Array(repeating: 1, count: 100))[0], from: Peers.alice)
        udp.channel.pipeline.fireChannelInactive()
        udp.advanceTime(by: .seconds(5))
        #expect(try udp.written().isEmpty, "no timeout error once the channel went inactive")
    }
}
