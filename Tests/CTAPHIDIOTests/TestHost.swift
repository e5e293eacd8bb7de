import CTAPHID
import CTAPHIDIO
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Datagrams received by a test host, in order. ``next(timeout:on:)`` waits for the next one (one waiter at a time)
/// without polling: a datagram hands itself to the waiter, and a timer on the host's event loop ends the wait.
final class Inbox: Sendable {
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<[UInt8]?, Never>
    }

    private struct State {
        var datagrams: [[UInt8]] = []
        var waiter: Waiter?
        var waiters = 0
    }

    private let state = Mutex(State())

    func append(_ datagram: [UInt8]) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiter else {
                state.datagrams.append(datagram)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.continuation.resume(returning: datagram)
    }

    /// The next datagram, or `nil` if none arrives within `timeout` (measured on `eventLoop`).
    func next(timeout: Duration, on eventLoop: any EventLoop) async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            let waiting = state.withLock { state -> Int? in
                if !state.datagrams.isEmpty {
                    continuation.resume(returning: state.datagrams.removeFirst())
                    return nil
                }
                precondition(state.waiter == nil, "one waiter at a time")
                state.waiters += 1
                state.waiter = Waiter(id: state.waiters, continuation: continuation)
                return state.waiters
            }
            guard let waiting else { return }
            eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                let expired = self.state.withLock { state -> Waiter? in
                    guard let waiter = state.waiter, waiter.id == waiting else { return nil }
                    state.waiter = nil
                    return waiter
                }
                expired?.continuation.resume(returning: nil)
            }
        }
    }
}

/// Puts every datagram the socket receives into an ``Inbox``.
final class InboxHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let inbox: Inbox

    init(inbox: Inbox) { self.inbox = inbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbox.append(Array(buffer: Self.unwrapInboundIn(data).data))
    }
}

/// A message as the host reassembled it.
struct HostMessage: Equatable {
    var command: UInt8
    var payload: [UInt8]
}

/// A CTAPHID host speaking to the server over a real UDP socket, framing everything by hand.
struct TestHost {
    let channel: any Channel
    let inbox: Inbox
    let server: SocketAddress

    static func connect(to server: CTAPHIDUDPServer) async throws -> TestHost {
        let inbox = Inbox()
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(InboxHandler(inbox: inbox))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return TestHost(channel: channel, inbox: inbox, server: server.localAddress)
    }

    func close() async { try? await channel.close() }

    func send(datagram: [UInt8]) async throws {
        let envelope = AddressedEnvelope(remoteAddress: server, data: channel.allocator.buffer(bytes: datagram))
        try await channel.writeAndFlush(envelope)
    }

    /// Sends every report of a message back to back, as a USB host does: queued at once and flushed together, so
    /// a busy test machine cannot open gaps between them that the 500 ms message timeout would catch.
    func send(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8]) async throws {
        let reports = hostReports(cid, command, payload)
        for report in reports.dropLast() {
            channel.write(
                AddressedEnvelope(remoteAddress: server, data: channel.allocator.buffer(bytes: report)), promise: nil)
        }
        try await send(datagram: reports.last!)
    }

    /// The next datagram, or `nil` if none arrives in time.
    func nextDatagram(timeout: Duration = .seconds(5)) async throws -> [UInt8]? {
        await inbox.next(timeout: timeout, on: channel.eventLoop)
    }

    /// Reads one message for `cid`, like python-fido2 does: keepalives are collected, not returned.
    func receive(
        _ cid: UInt32,
        keepalives: inout [UInt8],
        timeout: Duration = .seconds(5)
    ) async throws -> HostMessage {
        while true {
            let first = try #require(try await nextDatagram(timeout: timeout), "no reply")
            try #require(first.count == 64)
            try #require(Array(first.prefix(4)) == bigEndian(cid), "reply for another channel")
            try #require(first[4] & 0x80 != 0, "expected an initialization packet")
            let command = first[4] & 0x7F
            let length = Int(first[5]) << 8 | Int(first[6])
            var payload = Array(first[7..<(7 + min(57, length))])
            if command == 0x3B {
                keepalives += payload
                continue
            }
            var sequence: UInt8 = 0
            while payload.count < length {
                let next = try #require(try await nextDatagram(timeout: timeout), "message incomplete")
                try #require(next.count == 64 && Array(next.prefix(4)) == bigEndian(cid))
                try #require(next[4] == sequence, "sequence")
                payload += next[5..<(5 + min(59, length - payload.count))]
                sequence += 1
            }
            return HostMessage(command: command, payload: payload)
        }
    }

    func receive(_ cid: UInt32, timeout: Duration = .seconds(5)) async throws -> HostMessage {
        var keepalives: [UInt8] = []
        return try await receive(cid, keepalives: &keepalives, timeout: timeout)
    }

    /// Allocates a channel with a broadcast INIT, checking the response like python-fido2.
    func initialize() async throws -> UInt32 {
        let nonce = (0..<8).map { _ in UInt8.random(in: 0...255) }
        try await send(0xFFFF_FFFF, 0x06, nonce)
        let reply = try await receive(0xFFFF_FFFF)
        try #require(reply.command == 0x06 && reply.payload.count == 17)
        try #require(Array(reply.payload.prefix(8)) == nonce)
        #expect(reply.payload[12] == 2)
        #expect(reply.payload[16] == 0x0D)
        return reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

/// Every report a host sends for a message, framed by hand.
func hostReports(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8]) -> [[UInt8]] {
    func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + Array(repeating: 0, count: 64 - bytes.count) }
    var reports = [
        padded(
            bigEndian(cid) + [0x80 | command, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
                + payload.prefix(57))
    ]
    var offset = 57
    var sequence: UInt8 = 0
    while offset < payload.count {
        reports.append(padded(bigEndian(cid) + [sequence] + payload[offset..<min(offset + 59, payload.count)]))
        offset += 59
        sequence += 1
    }
    return reports
}

/// A value shared between a handler and its test.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) { self.value = Mutex(value) }

    func get() -> Value { value.withLock { $0 } }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
}

/// Runs `body` with a server on 127.0.0.1 and an ephemeral port, closing it afterwards.
func withServer<Result>(
    configuration: CTAPHIDUDPServer.Configuration = CTAPHIDUDPServer.Configuration(),
    wink: WinkHandler? = nil,
    handler: @escaping CBORHandler,
    _ body: (CTAPHIDUDPServer) async throws -> Result
) async throws -> Result {
    let server = try await CTAPHIDUDPServer.start(
        host: "127.0.0.1", port: 0, configuration: configuration, wink: wink, handler: handler)
    do {
        let result = try await body(server)
        await server.close()
        return result
    } catch {
        await server.close()
        throw error
    }
}
