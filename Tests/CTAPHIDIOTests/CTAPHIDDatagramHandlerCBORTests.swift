import CTAP2
import CTAPHID
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import CTAPHIDIO

/// A ``CTAPHIDDatagramHandler`` in a `NIOAsyncTestingChannel`, for CBOR requests: the authenticator runs in tasks
/// that report back from other threads, which this channel and its event loop accept. Time moves only with
/// `advanceTime`, and the handler's clock follows it.
struct AsyncUDPAuthenticator {
    let loop: NIOAsyncTestingEventLoop
    let channel: NIOAsyncTestingChannel

    init(handler: @escaping CBORHandler) async throws {
        let loop = NIOAsyncTestingEventLoop()
        let now = clock(following: loop)
        channel = try await NIOAsyncTestingChannel(loop: loop) { channel in
            try channel.pipeline.syncOperations.addHandler(
                CTAPHIDDatagramHandler(
                    configuration: CTAPHIDUDPServer.Configuration(), logger: quietLogger, wink: nil,
                    handler: handler, now: now))
        }
        self.loop = loop
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8111)).get()
    }

    func send(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8], from peer: SocketAddress) async throws {
        for report in hostReports(cid, command, payload) {
            try await channel.writeInbound(AddressedEnvelope(remoteAddress: peer, data: ByteBuffer(bytes: report)))
        }
    }

    /// Every datagram written so far and not read yet; after `advanceTime` or `run`, all the loop has done.
    func written() async throws -> [(peer: SocketAddress, report: [UInt8])] {
        var datagrams: [(peer: SocketAddress, report: [UInt8])] = []
        while let envelope = try await channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
            datagrams.append((envelope.remoteAddress, Array(buffer: envelope.data)))
        }
        return datagrams
    }

    func replies(sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Reply<SocketAddress>] {
        reassemble(try await written(), sourceLocation: sourceLocation)
    }

    /// Waits for the next message, which an authenticator task may still be writing.
    func nextReply() async throws -> Reply<SocketAddress> {
        var reports: [(peer: SocketAddress, report: [UInt8])] = []
        repeat {
            let envelope = try await channel.waitForOutboundWrite(as: AddressedEnvelope<ByteBuffer>.self)
            reports.append((envelope.remoteAddress, Array(buffer: envelope.data)))
        } while !Self.isComplete(reports)
        return try #require(reassemble(reports).first)
    }

    private static func isComplete(_ reports: [(peer: SocketAddress, report: [UInt8])]) -> Bool {
        guard let first = reports.first?.report, first.count == 64 else { return true }
        let length = Int(first[5]) << 8 | Int(first[6])
        return 57 + 59 * (reports.count - 1) >= length
    }

    func initialize(from peer: SocketAddress) async throws -> UInt32 {
        let nonce: [UInt8] = [8, 7, 6, 5, 4, 3, 2, 1]
        try await send(0xFFFF_FFFF, 0x06, nonce, from: peer)
        let reply = try await nextReply()
        try #require(reply.peer == peer && reply.command == 0x06 && Array(reply.payload.prefix(8)) == nonce)
        return reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    func close() async throws {
        try await channel.close()
        await loop.shutdownGracefully()
    }
}

/// CBOR requests through the datagram handler: dispatch, keepalives, cancellation and the busy rules while the
/// authenticator works, all without a socket and without waiting for real time to pass.
@Suite(.timeLimit(.minutes(1)))
struct CTAPHIDDatagramHandlerCBORTests {
    @Test func aRequestInSeveralDatagramsReachesTheAuthenticatorWhole() async throws {
        let received = Shared<[UInt8]>([])
        let udp = try await AsyncUDPAuthenticator { request, _ in
            received.set(request)
            return [0x00] + request.reversed() + request
        }
        let cid = try await udp.initialize(from: Peers.alice)
        let request = [0x01] + (0..<1200).map { UInt8(truncatingIfNeeded: $0 * 13) }
        try await udp.send(cid, 0x10, request, from: Peers.alice)
        let reply = try await udp.nextReply()
        #expect(received.get() == request)
        #expect(
            reply == Reply(peer: Peers.alice, channel: cid, command: 0x10, payload: [0] + request.reversed() + request))
        try await udp.close()
    }

    @Test func keepalivesFollowTheAuthenticatorEvery100Milliseconds() async throws {
        let waiting = Gate()
        let user = Gate()
        let udp = try await AsyncUDPAuthenticator { _, setStatus in
            setStatus(.userPresenceNeeded)
            waiting.open()
            await user.wait()
            return [0x00, 0xA1, 0x01, 0x02]
        }
        let cid = try await udp.initialize(from: Peers.alice)
        try await udp.send(cid, 0x10, [0x02], from: Peers.alice)
        let keepalive = Reply(peer: Peers.alice, channel: cid, command: 0x3B, payload: [0x02])
        // The change of status is reported at once, then every 100 ms of the loop's time.
        #expect(try await udp.nextReply() == keepalive)
        await waiting.wait()
        await udp.loop.advanceTime(by: .milliseconds(50))
        #expect(try await udp.written().isEmpty)
        await udp.loop.advanceTime(by: .milliseconds(50))
        #expect(try await udp.replies() == [keepalive])
        await udp.loop.advanceTime(by: .milliseconds(300))
        #expect(try await udp.replies() == [keepalive, keepalive, keepalive])
        user.open()
        #expect(
            try await udp.nextReply()
                == Reply(peer: Peers.alice, channel: cid, command: 0x10, payload: [0x00, 0xA1, 0x01, 0x02]))
        await udp.loop.advanceTime(by: .milliseconds(500))
        #expect(try await udp.written().isEmpty, "no keepalives after the response")
        try await udp.close()
    }

    @Test func cancelEndsTheAuthenticatorsWait() async throws {
        let sawCancellation = Shared(false)
        let udp = try await AsyncUDPAuthenticator { _, setStatus in
            setStatus(.userPresenceNeeded)
            guard await Gate().wait() else {
                sawCancellation.set(true)
                return [CTAPError.keepaliveCancel.rawValue]
            }
            return [0x00]
        }
        let cid = try await udp.initialize(from: Peers.alice)
        try await udp.send(cid, 0x10, [0x02], from: Peers.alice)
        #expect(try await udp.nextReply() == Reply(peer: Peers.alice, channel: cid, command: 0x3B, payload: [0x02]))
        try await udp.send(cid, 0x11, [], from: Peers.alice)
        #expect(try await udp.nextReply() == Reply(peer: Peers.alice, channel: cid, command: 0x10, payload: [0x2D]))
        #expect(sawCancellation.get())
        try await udp.close()
    }

    @Test func othersAreBusyWhileTheAuthenticatorWorksAndCannotCancelIt() async throws {
        let started = Gate()
        let user = Gate()
        let cancelled = Shared(false)
        let udp = try await AsyncUDPAuthenticator { request, _ in
            guard request == [0x01, 0xAA] else { return [0x00] + request }
            started.open()
            if !(await user.wait()) { cancelled.set(true) }
            return [0x00] + request
        }
        let aliceChannel = try await udp.initialize(from: Peers.alice)
        let bobChannel = try await udp.initialize(from: Peers.bob)
        #expect(aliceChannel != bobChannel)
        try await udp.send(aliceChannel, 0x10, [0x01, 0xAA], from: Peers.alice)
        await started.wait()

        // Bob: busy on his channel; on Alice's channel, busy for INIT and CBOR, and his CANCEL is not answered.
        try await udp.send(bobChannel, 0x01, [0x42], from: Peers.bob)
        try await udp.send(bobChannel, 0x10, [0x01, 0xBB], from: Peers.bob)
        try await udp.send(aliceChannel, 0x06, [1, 2, 3, 4, 5, 6, 7, 8], from: Peers.bob)
        try await udp.send(aliceChannel, 0x11, [], from: Peers.bob)
        try await udp.send(aliceChannel, 0x10, [0x01, 0xBB], from: Peers.bob)
        #expect(
            try await udp.replies() == [
                errorReply(0x06, channel: bobChannel, to: Peers.bob),
                errorReply(0x06, channel: bobChannel, to: Peers.bob),
                errorReply(0x06, channel: aliceChannel, to: Peers.bob),
                errorReply(0x06, channel: aliceChannel, to: Peers.bob),
            ])
        #expect(!cancelled.get())

        user.open()
        #expect(
            try await udp.nextReply()
                == Reply(peer: Peers.alice, channel: aliceChannel, command: 0x10, payload: [0x00, 0x01, 0xAA]))
        try await udp.send(bobChannel, 0x10, [0x01, 0xBB], from: Peers.bob)
        #expect(
            try await udp.nextReply()
                == Reply(peer: Peers.bob, channel: bobChannel, command: 0x10, payload: [0x00, 0x01, 0xBB]))
        #expect(try await udp.written().isEmpty, "nothing else, and nothing of Bob's went to Alice")
        #expect(!cancelled.get())
        try await udp.close()
    }

    @Test func aResynchronizedChannelDropsTheLateAnswer() async throws {
        let first = Gate()
        let cancelled = Gate()
        let udp = try await AsyncUDPAuthenticator { request, _ in
            guard request == [0x01] else { return [0x00] + request }
            first.open()
            if !(await Gate().wait()) { cancelled.open() }
            return [0x00, 0xDE, 0xAD]
        }
        let cid = try await udp.initialize(from: Peers.alice)
        try await udp.send(cid, 0x10, [0x01], from: Peers.alice)
        await first.wait()
        try await udp.send(cid, 0x06, [9, 9, 9, 9, 9, 9, 9, 9], from: Peers.alice)
        let resynchronized = try await udp.nextReply()
        #expect(resynchronized.channel == cid && resynchronized.command == 0x06)
        #expect(Array(resynchronized.payload[8..<12]) == bigEndian(cid))
        await cancelled.wait()
        try await udp.send(cid, 0x10, [0x02], from: Peers.alice)
        // The first request's answer, which came after the INIT, never reaches the host.
        #expect(
            try await udp.nextReply() == Reply(peer: Peers.alice, channel: cid, command: 0x10, payload: [0x00, 0x02]))
        try await udp.close()
    }

    @Test func initsFromAnotherPeerDoNotEvictAClientsChannel() async throws {
        let udp = try await AsyncUDPAuthenticator { request, _ in [0x00] + request }
        let aliceChannel = try await udp.initialize(from: Peers.alice)
        var malloryChannels: [UInt32] = []
        for _ in 0..<100 { malloryChannels.append(try await udp.initialize(from: Peers.mallory)) }
        try await udp.send(aliceChannel, 0x10, [0x01, 0xAA], from: Peers.alice)
        #expect(
            try await udp.nextReply()
                == Reply(peer: Peers.alice, channel: aliceChannel, command: 0x10, payload: [0x00, 0x01, 0xAA]))
        // Mallory's flood recycled her own channels: her first one is gone.
        try await udp.send(malloryChannels[0], 0x01, [1], from: Peers.mallory)
        #expect(try await udp.nextReply() == errorReply(0x0B, channel: malloryChannels[0], to: Peers.mallory))
        try await udp.close()
    }

    @Test func anInactiveChannelCancelsTheRunningRequestAndSendsNothingMore() async throws {
        let started = Gate()
        let cancelled = Gate()
        let udp = try await AsyncUDPAuthenticator { _, _ in
            started.open()
            if !(await Gate().wait()) { cancelled.open() }
            return [0x2D]
        }
        let cid = try await udp.initialize(from: Peers.alice)
        try await udp.send(cid, 0x10, [0x02], from: Peers.alice)
        await started.wait()
        udp.channel.pipeline.fireChannelInactive()
        #expect(await cancelled.wait(), "the running request was cancelled")
        // The channel is still open, so keepalives or the late answer would show here.
        await udp.loop.advanceTime(by: .seconds(1))
        #expect(try await udp.written().isEmpty, "nothing is sent once the channel went inactive")
        try await udp.close()
    }
}
