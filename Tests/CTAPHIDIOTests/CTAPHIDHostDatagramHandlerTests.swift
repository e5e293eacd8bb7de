import CTAPHID
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import CTAPHIDIO

/// The host's datagram handler in an `EmbeddedChannel`: requests are written into the channel, the datagrams it
/// writes come out, the device's datagrams go in, and its clock is the embedded loop's (moved with `advanceTime`).
/// No sockets, no waiting.
struct EmbeddedUDPHost {
    static let device = try! SocketAddress(ipAddress: "127.0.0.1", port: 8111)
    static let nonce: [UInt8] = [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8]
    static let channelID: UInt32 = 0x0C0F_FEE0

    let loop = EmbeddedEventLoop()
    let channel: EmbeddedChannel
    let handler: CTAPHIDHostDatagramHandler

    init(cancelGracePeriod: Duration = .seconds(1)) throws {
        var configuration = CTAPHIDHostStateMachine.Configuration()
        configuration.cancelGracePeriod = cancelGracePeriod
        handler = CTAPHIDHostDatagramHandler(
            device: Self.device, configuration: configuration, now: clock(following: loop),
            nonce: { 0xA1A2_A3A4_A5A6_A7A8 })
        channel = EmbeddedChannel(handler: handler, loop: loop)
        try channel.connect(to: Self.device).wait()
    }

    /// Writes an exchange request; its future completes when the device answers.
    func exchange(
        _ command: CTAPHIDCommand, _ payload: [UInt8], timeout: Duration = .seconds(5),
        onKeepalive: (@Sendable (KeepaliveStatus) -> Void)? = nil
    ) throws -> EventLoopFuture<[UInt8]> {
        let promise = loop.makePromise(of: [UInt8].self)
        try channel.writeOutbound(
            CTAPHIDHostRequest.exchange(
                command: command, payload: payload, timeout: timeout, onKeepalive: onKeepalive, promise: promise))
        return promise.futureResult
    }

    /// Every datagram written since the last call; each must be one report for the device.
    func written(sourceLocation: SourceLocation = #_sourceLocation) throws -> [[UInt8]] {
        var reports: [[UInt8]] = []
        while let envelope = try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
            #expect(envelope.remoteAddress == Self.device, sourceLocation: sourceLocation)
            reports.append(Array(buffer: envelope.data))
        }
        return reports
    }

    func deliver(_ reports: [[UInt8]], from peer: SocketAddress = device) throws {
        for report in reports {
            try channel.writeInbound(AddressedEnvelope(remoteAddress: peer, data: ByteBuffer(bytes: report)))
        }
    }

    /// Answers the INIT the handler sent with `channelID`.
    func allocate() throws {
        #expect(try written() == hostReports(0xFFFF_FFFF, 0x06, Self.nonce))
        try deliver(hostReports(0xFFFF_FFFF, 0x06, Self.nonce + bigEndian(Self.channelID) + [2, 1, 2, 3, 0x0D]))
    }
}

/// What a future completed with, without waiting (the embedded loop runs everything at once).
func outcome<Value: Sendable>(_ future: EventLoopFuture<Value>) -> Result<Value, CTAPHIDConnectionError>? {
    let result = Mutex<Result<Value, CTAPHIDConnectionError>?>(nil)
    future.whenComplete { completed in
        result.withLock {
            $0 = completed.mapError { ($0 as? CTAPHIDConnectionError) ?? .closed }
        }
    }
    return result.withLock { $0 }
}

struct CTAPHIDHostDatagramHandlerTests {
    @Test func anExchangeGoesOutAsDatagramsAndItsAnswerComesBack() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x04])
        try host.allocate()
        #expect(try host.written() == hostReports(EmbeddedUDPHost.channelID, 0x10, [0x04]))
        #expect(outcome(response) == nil)
        try host.deliver(hostReports(EmbeddedUDPHost.channelID, 0x10, [0x00, 0xA0]))
        #expect(try outcome(response)?.get() == [0x00, 0xA0])
        // The channel is kept: the next exchange goes out at once.
        let next = try host.exchange(.ping, [1, 2, 3])
        #expect(try host.written() == hostReports(EmbeddedUDPHost.channelID, 0x01, [1, 2, 3]))
        try host.deliver(hostReports(EmbeddedUDPHost.channelID, 0x01, [1, 2, 3]))
        #expect(try outcome(next)?.get() == [1, 2, 3])
    }

    @Test func theLongestMessagesTravelBothWays() throws {
        let host = try EmbeddedUDPHost()
        let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let response = try host.exchange(.ping, payload)
        try host.allocate()
        let reports = try host.written()
        #expect(reports.count == 129)
        #expect(reports == hostReports(EmbeddedUDPHost.channelID, 0x01, payload))
        try host.deliver(reports)
        #expect(try outcome(response)?.get() == payload)
    }

    @Test func datagramsFromElsewhereOrOfAnotherSizeAreDropped() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x04])
        try host.allocate()
        _ = try host.written()
        let answer = hostReports(EmbeddedUDPHost.channelID, 0x10, [0x00])
        let stranger = try SocketAddress(ipAddress: "127.0.0.1", port: 9999)
        try host.deliver(answer, from: stranger)
        try host.deliver([Array(answer[0].prefix(63)), answer[0] + [0], []])
        #expect(outcome(response) == nil)
        #expect(host.handler.droppedDatagrams == 4)
        try host.deliver(answer)
        #expect(try outcome(response)?.get() == [0x00])
    }

    @Test func keepalivesReachTheCaller() throws {
        let host = try EmbeddedUDPHost()
        let statuses = Mutex<[KeepaliveStatus]>([])
        let response = try host.exchange(
            .cbor, [0x01], onKeepalive: { status in statuses.withLock { $0.append(status) } })
        try host.allocate()
        try host.deliver([
            hostReports(EmbeddedUDPHost.channelID, 0x3B, [1])[0], hostReports(EmbeddedUDPHost.channelID, 0x3B, [2])[0],
            hostReports(EmbeddedUDPHost.channelID, 0x3B, [2])[0],
        ])
        #expect(statuses.withLock { $0 } == [.processing, .userPresenceNeeded, .userPresenceNeeded])
        try host.deliver(hostReports(EmbeddedUDPHost.channelID, 0x10, [0x00]))
        #expect(try outcome(response)?.get() == [0x00])
    }

    @Test func theDeadlineIsATimerOnTheLoopThatCancelsOnTheDevice() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x01], timeout: .seconds(2))
        try host.allocate()
        _ = try host.written()
        host.loop.advanceTime(by: .milliseconds(1999))
        #expect(outcome(response) == nil)
        host.loop.advanceTime(by: .milliseconds(1))
        #expect(try host.written() == hostReports(EmbeddedUDPHost.channelID, 0x11, []))
        #expect(outcome(response)?.failure == .exchange(.responseTimedOut(.cbor)))
    }

    @Test func anAllocationThatNobodyAnswersTimesOut() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x04], timeout: .milliseconds(500))
        host.loop.advanceTime(by: .milliseconds(500))
        #expect(outcome(response)?.failure == .exchange(.channelAllocationTimedOut))
    }

    @Test func cancelSendsCTAPHIDCancelAndTheDevicesAnswerEndsTheExchange() throws {
        let host = try EmbeddedUDPHost(cancelGracePeriod: .milliseconds(300))
        let response = try host.exchange(.cbor, [0x01])
        try host.allocate()
        _ = try host.written()
        try host.channel.writeOutbound(CTAPHIDHostRequest.cancel)
        #expect(try host.written() == hostReports(EmbeddedUDPHost.channelID, 0x11, []))
        try host.deliver(hostReports(EmbeddedUDPHost.channelID, 0x10, [0x2D]))
        #expect(try outcome(response)?.get() == [0x2D])

        // Unanswered, the cancellation ends with the grace period.
        let second = try host.exchange(.cbor, [0x01])
        try host.channel.writeOutbound(CTAPHIDHostRequest.cancel)
        #expect(try host.written().count == 2)  // the request, then CTAPHID_CANCEL
        host.loop.advanceTime(by: .milliseconds(300))
        #expect(outcome(second)?.failure == .exchange(.cancelled))
    }

    @Test func aSecondExchangeWhileOneRunsIsRefusedAndTheFirstGoesOn() throws {
        let host = try EmbeddedUDPHost()
        let first = try host.exchange(.cbor, [0x04])
        let second = try host.exchange(.ping, [1])
        #expect(outcome(second)?.failure == .exchange(.busy))
        try host.allocate()
        try host.deliver(hostReports(EmbeddedUDPHost.channelID, 0x10, [0x00]))
        #expect(try outcome(first)?.get() == [0x00])
    }

    @Test func refusedRequestsFailAtOnce() throws {
        let host = try EmbeddedUDPHost()
        #expect(
            outcome(try host.exchange(.cbor, [UInt8](repeating: 0, count: 7610)))?.failure
                == .exchange(.messageTooLong(7610)))
        #expect(outcome(try host.exchange(.keepalive, []))?.failure == .exchange(.commandNotSendable(.keepalive)))
        #expect(try host.written().isEmpty)
    }

    @Test func closingFailsTheExchangeAndEveryLaterOne() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x04])
        try host.channel.close().wait()
        #expect(outcome(response)?.failure == .closed)
    }

    @Test func aSocketErrorEndsTheConnectionWithIt() throws {
        let host = try EmbeddedUDPHost()
        let response = try host.exchange(.cbor, [0x04])
        host.channel.pipeline.fireErrorCaught(IOError(errnoCode: 111, reason: "recvmsg"))
        guard case .deviceFailed(_, 111)? = outcome(response)?.failure else {
            Issue.record("expected ECONNREFUSED, got \(String(describing: outcome(response)))")
            return
        }
        #expect("\(outcome(response)!.failure!)".contains("connection refused"))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
