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

/// Opens and closes tunnels against the relay.
struct LoadGenerator {
    let group: MultiThreadedEventLoopGroup
    let port: Int
    /// Source addresses, so that 20,000 connections do not run out of ephemeral ports.
    static let sources = (2...9).map { "127.0.0.\($0)" }

    struct Pair {
        let authenticator: any Channel
        let client: any Channel
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
            let lanes = min(256, count)
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

    private func openTunnel(index: Int, role: BenchHandler.Role) async throws -> Pair {
        let tunnelID = (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
        let source = Self.sources[index % Self.sources.count]
        let (authenticator, routingID) = try await connect(
            path: "/cable/new/\(tunnelID)", source: source, role: role.authenticatorRole)
        guard let routingID else { throw BenchError("no routing ID from /cable/new") }
        let (client, _) = try await connect(
            path: "/cable/connect/\(routingID)/\(tunnelID)", source: source, role: role.clientRole)
        return Pair(authenticator: authenticator, client: client)
    }

    private func connect(path: String, source: String, role: BenchHandler.Role) async throws -> (any Channel, String?) {
        let request =
            "GET \(path) HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: fido.cable\r\n\r\n"
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(BenchHandler(role: role))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let handshake = channel.eventLoop.makePromise(of: String?.self)
        try await channel.eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: BenchHandler.self)
            handler.handshake = handshake
        }.get()
        try await channel.writeAndFlush(channel.allocator.buffer(string: request))
        return (channel, try await handshake.futureResult.get())
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
    var handshake: EventLoopPromise<String?>?
    private var response: [UInt8] = []
    private var partial: [UInt8] = []
    private var pendingFrameBytes = 0

    init(role: Role) { self.role = role }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        if let handshake {
            response += buffer.readableBytesView
            guard let end = response.firstRange(of: [13, 10, 13, 10]) else { return }
            let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
            self.handshake = nil
            guard head.hasPrefix("HTTP/1.1 101") else {
                handshake.fail(BenchError("upgrade refused: \(head.prefix(40))"))
                return
            }
            let routingID = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-cable-routing-id:") }
                .map { String($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
            handshake.succeed(routingID)
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
            while partial.count - offset >= RelayBench.serverFrameSize {
                var sent: UInt64 = 0
                for index in 0..<8 { sent = sent << 8 | UInt64(partial[offset + 4 + index]) }
                samples.append(now &- sent)
                offset += RelayBench.serverFrameSize
            }
            partial.removeFirst(offset)
        }
    }

    private func countFrames(_ bytes: Int) -> Int {
        pendingFrameBytes += bytes
        let frames = pendingFrameBytes / RelayBench.serverFrameSize
        pendingFrameBytes -= frames * RelayBench.serverFrameSize
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
