import Basics
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Messages received, over all connections.
final class MessageCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// One-way latencies in nanoseconds.
final class LatencySamples: Sendable {
    private let samples = Mutex<[UInt64]>([])
    func append(_ sample: UInt64) { samples.withLock { $0.append(sample) } }
    func drain() -> [UInt64] {
        samples.withLock { samples in
            defer { samples = [] }; return samples
        }
    }
}

/// Monotonic nanoseconds, comparable across threads of this process.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// What the load generator's tunnels go through.
enum TunnelKind: String, Sendable {
    /// passkey-relay, alone or behind a balancer: `/cable/new/{tunnel}`, then `/cable/connect/{routing ID}/{tunnel}`
    /// (WebSocket upgrades); the relay unmasks the frames it forwards.
    case relay
    /// The echo-pair server behind HAProxy in TCP mode (`Tools/bench relay --cluster`'s ceiling): each side sends
    /// the line `{tunnel}A` or `{tunnel}C` and gets `ok {server}`; the frames then arrive byte for byte, still masked.
    case echoPair = "echo-pair"

    /// The request that opens the authenticator's side.
    func authenticatorRequest(tunnelID: String) -> String {
        switch self {
        case .relay: Self.upgrade(path: "/cable/new/\(tunnelID)")
        case .echoPair: tunnelID + "A\n"
        }
    }

    /// The request that joins the client's side to the tunnel the authenticator's side opened on `server`.
    func clientRequest(tunnelID: String, server: String) -> String {
        switch self {
        case .relay: Self.upgrade(path: "/cable/connect/\(server)/\(tunnelID)")
        case .echoPair: tunnelID + "C\n"
        }
    }

    private static func upgrade(path: String) -> String {
        "GET \(path) HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: fido.cable\r\n\r\n"
    }

    /// The bytes that end the server's answer to a request.
    var answerEnd: [UInt8] { self == .relay ? [13, 10, 13, 10] : [10] }

    /// Whether the server's answer (without `answerEnd`) accepts the request, and the server that holds the tunnel.
    func read(answer head: String) -> (accepted: Bool, server: String?) {
        switch self {
        case .relay:
            guard head.hasPrefix("HTTP/1.1 101") else { return (false, nil) }
            let routingID = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-cable-routing-id:") }
                .map { String($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
            return (true, routingID)
        case .echoPair:
            guard head.hasPrefix("ok ") else { return (false, nil) }
            return (true, String(head.dropFirst(3)))
        }
    }

    /// The size of one 256-byte message as it arrives: a server frame from the relay, the client's masked frame
    /// from the echo pair.
    var inboundFrameSize: Int { self == .relay ? RelayBench.serverFrameSize : LoadGenerator.frame.count }

    /// The send time a latency message carries (big-endian nanoseconds, the first 8 payload bytes).
    func sendTime(in frame: ArraySlice<UInt8>) -> UInt64 {
        let start = frame.startIndex
        var sent: UInt64 = 0
        for index in 0..<8 {
            switch self {
            case .relay: sent = sent << 8 | UInt64(frame[start + 4 + index])
            case .echoPair: sent = sent << 8 | UInt64(frame[start + 8 + index] ^ RelayBench.maskKey[index & 3])
            }
        }
        return sent
    }
}

/// Tunnels opened by `LoadGenerator.openTunnelsCountingFailures(_:role:)`.
struct TunnelOpening {
    var pairs: [LoadGenerator.Pair] = []
    var failures = 0
    var firstError: String?
    /// Paired tunnels per server (routing ID of the relay instance, or echo-pair server number).
    var spread: [String: Int] = [:]
}

/// Opens and closes tunnels against the relay.
struct LoadGenerator {
    let group: MultiThreadedEventLoopGroup
    let port: Int
    var kind = TunnelKind.relay
    /// Tunnels being opened at once.
    var lanes = 256
    /// Source addresses, so that 20,000 connections do not run out of ephemeral ports.
    static let sources = (2...9).map { "127.0.0.\($0)" }
    /// IP_BIND_ADDRESS_NO_PORT (linux/in.h): a bound source address gets its port at connect, by the whole address
    /// pair, as an unbound socket does, instead of one port per bound socket from the whole machine's range.
    static let bindAddressNoPort = NIOBSDSocket.Option(rawValue: 24)

    struct Pair {
        let authenticator: any Channel
        let client: any Channel
        /// The routing ID of the relay instance, or the number of the echo-pair server, that holds the tunnel.
        let server: String
    }

    /// A pre-encoded masked binary frame with a 256-byte payload.
    static let frame: [UInt8] = {
        let payload = [UInt8](repeating: 0x5A, count: RelayBench.payloadSize)
        return [0x82, 0x80 | 126, UInt8(RelayBench.payloadSize >> 8), UInt8(RelayBench.payloadSize & 0xFF)]
            + RelayBench.maskKey + payload.enumerated().map { $1 ^ RelayBench.maskKey[$0 & 3] }
    }()

    /// Writes `count` pre-encoded frames and flushes once (on the channel's event loop).
    static func sendFrames(_ count: Int, on channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: count * frame.count)
        for _ in 0..<count { buffer.writeBytes(frame) }
        channel.writeAndFlush(buffer, promise: nil)
    }

    func openTunnels(_ count: Int, role: BenchHandler.Role) async throws -> [Pair] {
        try await withThrowingTaskGroup(of: [Pair].self) { tasks in
            let lanes = min(self.lanes, count)
            for lane in 0..<lanes {
                tasks.addTask {
                    var pairs: [Pair] = []
                    for index in stride(from: lane, to: count, by: lanes) {
                        pairs.append(try await openTunnel(index: index, role: role))
                    }
                    return pairs
                }
            }
            var all: [Pair] = []
            for try await pairs in tasks { all += pairs }
            return all
        }
    }

    /// Opens `count` tunnels, `lanes` at a time, and goes on past failures: the tunnels opened, the failures
    /// counted.
    func openTunnelsCountingFailures(_ count: Int, role: BenchHandler.Role) async -> TunnelOpening {
        await withTaskGroup(of: TunnelOpening.self) { tasks in
            let lanes = min(self.lanes, count)
            for lane in 0..<lanes {
                tasks.addTask {
                    var opening = TunnelOpening()
                    for index in stride(from: lane, to: count, by: lanes) {
                        do {
                            let pair = try await openTunnel(index: index, role: role)
                            opening.pairs.append(pair)
                            opening.spread[pair.server, default: 0] += 1
                        } catch {
                            opening.failures += 1
                            if opening.firstError == nil { opening.firstError = "\(error)" }
                        }
                    }
                    return opening
                }
            }
            var all = TunnelOpening()
            for await opening in tasks {
                all.pairs += opening.pairs
                all.failures += opening.failures
                all.firstError = all.firstError ?? opening.firstError
                all.spread.merge(opening.spread, uniquingKeysWith: +)
            }
            return all
        }
    }

    private func openTunnel(index: Int, role: BenchHandler.Role) async throws -> Pair {
        let tunnelID = (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
        let source = Self.sources[index % Self.sources.count]
        let (authenticator, server) = try await connect(
            request: kind.authenticatorRequest(tunnelID: tunnelID), source: source, role: role.authenticatorRole)
        do {
            guard let server else { throw BenchError("no routing ID from /cable/new") }
            let (client, clientServer) = try await connect(
                request: kind.clientRequest(tunnelID: tunnelID, server: server), source: source,
                role: role.clientRole)
            if kind == .echoPair && clientServer != server {
                client.close(promise: nil)
                throw BenchError("the sides reached echo-pair servers \(server) and \(clientServer ?? "?")")
            }
            return Pair(authenticator: authenticator, client: client, server: server)
        } catch {
            authenticator.close(promise: nil)
            throw error
        }
    }

    private func connect(request: String, source: String, role: BenchHandler.Role) async throws -> (
        any Channel, String?
    ) {
        let kind = self.kind
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.ipOption(Self.bindAddressNoPort), value: 1)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(BenchHandler(role: role, kind: kind))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        do {
            let handshake = channel.eventLoop.makePromise(of: String?.self)
            try await channel.eventLoop.submit {
                let handler = try channel.pipeline.syncOperations.handler(type: BenchHandler.self)
                handler.handshake = handshake
                let waiting = NIOLoopBound(handler, eventLoop: channel.eventLoop)
                channel.eventLoop.scheduleTask(in: .seconds(10)) {
                    guard let handshake = waiting.value.handshake else { return }
                    waiting.value.handshake = nil
                    handshake.fail(BenchError("no answer within 10 s"))
                }
            }.get()
            try await channel.writeAndFlush(channel.allocator.buffer(string: request))
            return (channel, try await handshake.futureResult.get())
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    func close(_ pairs: [Pair]) async throws {
        for pair in pairs {
            pair.client.close(promise: nil)
            pair.authenticator.close(promise: nil)
        }
        for pair in pairs {
            try? await pair.client.closeFuture.get()
            try? await pair.authenticator.closeFuture.get()
        }
    }

    /// Polls `/metrics` until the relay holds no tunnel.
    func waitForRelayToDrain() async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let body = try await metrics()
            if Self.sample("relay_tunnels_open", in: body) == 0 && Self.sample("relay_connections_open", in: body) == 1
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("the relay still holds tunnels 30 s after they were closed")
    }

    /// The value of an unlabelled sample in Prometheus text (gauges are written as `1.0`).
    static func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
    }

    private func metrics() async throws -> String {
        let bytes = MetricsBytes()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(MetricsReader(bytes: bytes))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try await channel.writeAndFlush(channel.allocator.buffer(string: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
        try await channel.closeFuture.get()
        return bytes.text
    }
}

final class MetricsBytes: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func append(_ buffer: ByteBuffer) { bytes.withLock { $0 += buffer.readableBytesView } }
    var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
}

final class MetricsReader: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let bytes: MetricsBytes
    init(bytes: MetricsBytes) { self.bytes = bytes }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { bytes.append(Self.unwrapInboundIn(data)) }
}

/// The load generator's side of one WebSocket: reads the upgrade answer, then counts fixed-size frames.
final class BenchHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    enum Role: Sendable {
        /// Holds the tunnel open.
        case idle
        /// Throughput: the client sends and refills its window, the authenticator echoes; both count.
        case echo(MessageCounter)
        /// Latency: the authenticator records how long each message took.
        case latency(LatencySamples)
        case echoAuthenticator(MessageCounter)
        case latencyReceiver(LatencySamples)

        var authenticatorRole: Role {
            switch self {
            case .echo(let counter): .echoAuthenticator(counter)
            case .latency(let samples): .latencyReceiver(samples)
            default: self
            }
        }

        var clientRole: Role {
            switch self {
            case .latency: .idle
            default: self
            }
        }
    }

    let role: Role
    let kind: TunnelKind
    let frameSize: Int
    var handshake: EventLoopPromise<String?>?
    private var response: [UInt8] = []
    private var partial: [UInt8] = []
    private var pendingFrameBytes = 0

    init(role: Role, kind: TunnelKind = .relay) {
        self.role = role
        self.kind = kind
        frameSize = kind.inboundFrameSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        if let handshake {
            response += buffer.readableBytesView
            guard let end = response.firstRange(of: kind.answerEnd) else { return }
            let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
            self.handshake = nil
            let answer = kind.read(answer: head)
            guard answer.accepted else {
                handshake.fail(BenchError("refused: \(head.prefix(40))"))
                return
            }
            handshake.succeed(answer.server)
            buffer = context.channel.allocator.buffer(bytes: response[end.upperBound...])
            response = []
        }
        switch role {
        case .idle:
            break
        case .echo(let counter):
            let frames = countFrames(buffer.readableBytes)
            counter.value.add(frames, ordering: .relaxed)
            if frames > 0 { LoadGenerator.sendFrames(frames, on: context.channel) }
        case .echoAuthenticator(let counter):
            let frames = countFrames(buffer.readableBytes)
            counter.value.add(frames, ordering: .relaxed)
            if frames > 0 { LoadGenerator.sendFrames(frames, on: context.channel) }
        case .latencyReceiver(let samples), .latency(let samples):
            let now = monotonicNanoseconds()
            partial += buffer.readableBytesView
            var offset = 0
            while partial.count - offset >= frameSize {
                samples.append(now &- kind.sendTime(in: partial[offset..<offset + frameSize]))
                offset += frameSize
            }
            partial.removeFirst(offset)
        }
    }

    private func countFrames(_ bytes: Int) -> Int {
        pendingFrameBytes += bytes
        let frames = pendingFrameBytes / frameSize
        pendingFrameBytes -= frames * frameSize
        return frames
    }
}

/// Sends messages carrying their send time at a fixed rate, round-robin over the client sides.
final class Pacer: Sendable {
    private let tunnels: [any Channel]
    private let rate: Int
    private let sent = Atomic<Int>(0)

    init(tunnels: [any Channel], rate: Int) {
        self.tunnels = tunnels
        self.rate = rate
    }

    var sentCount: Int { sent.load(ordering: .relaxed) }

    func run(for duration: Duration, on loop: any EventLoop) async throws {
        let start = monotonicNanoseconds()
        let end = start + UInt64(duration.inSeconds * 1e9)
        let done = loop.makePromise(of: Void.self)
        let task = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .microseconds(100)) { task in
            let now = monotonicNanoseconds()
            let due = Int(Double(now - start) / 1e9 * Double(self.rate))
            var count = self.sent.load(ordering: .relaxed)
            while count < due {
                self.send(on: self.tunnels[count % self.tunnels.count])
                count += 1
            }
            self.sent.store(count, ordering: .relaxed)
            if now >= end {
                task.cancel()
                done.succeed()
            }
        }
        _ = task
        try await done.futureResult.get()
    }

    /// Stamps and writes on the channel's own event loop, so the hop between loops is not measured.
    private func send(on channel: any Channel) {
        if channel.eventLoop.inEventLoop {
            Self.stampAndWrite(on: channel)
        } else {
            channel.eventLoop.execute { Self.stampAndWrite(on: channel) }
        }
    }

    private static func stampAndWrite(on channel: any Channel) {
        var frame = LoadGenerator.frame
        let now = monotonicNanoseconds()
        for index in 0..<8 {
            frame[8 + index] =
                UInt8(truncatingIfNeeded: now >> (56 - 8 * UInt64(index))) ^ RelayBench.maskKey[index & 3]
        }
        channel.writeAndFlush(channel.allocator.buffer(bytes: frame), promise: nil)
    }
}
