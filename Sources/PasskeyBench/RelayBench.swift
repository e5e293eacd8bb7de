import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// `Tools/bench relay`: the `passkey-relay` executable under load from a separate process.
///
/// 1. Idle tunnels: opens `--tunnels` paired tunnels and reports the relay's resident memory per tunnel
///    (VmRSS from /proc before and after).
/// 2. Throughput: `--throughput-tunnels` tunnels, each keeping `--window` 256-byte messages in flight; the
///    authenticator side echoes every message, so both directions are relayed.
/// 3. Latency: `--rate` messages per second, paced, over `--latency-tunnels` tunnels; reports the time
///    from writing a message to reading it on the other side (one way, through the relay, as measured).
///
/// Frames are pre-encoded and masked; the load generator reads server frames by their fixed size.
struct RelayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Idle-tunnel memory, relayed messages/s and added latency of passkey-relay."
    )

    @Option(help: "Paired idle tunnels for the memory figure.") var tunnels = 10_000
    @Option(help: "Tunnels for the throughput figure.") var throughputTunnels = 64
    @Option(help: "Messages in flight per throughput tunnel.") var window = 16
    @Option(help: "Seconds per throughput and latency run.") var seconds: Double = 5
    @Option(help: "Messages per second in the paced latency run.") var rate = 10_000
    @Option(help: "Tunnels for the latency run.") var latencyTunnels = 100
    @Option(help: "Event loop threads of the relay.") var relayThreads = 2
    @Option(help: "Event loop threads of the load generator.") var clientThreads = 2
    @Option(help: "Path of passkey-relay (default: next to passkey-bench).") var relay: String?

    static let payloadSize = 256
    /// A server frame of a 256-byte message: 2 header bytes, a 16-bit length, the payload.
    static let serverFrameSize = 4 + payloadSize
    static let maskKey: [UInt8] = [0x12, 0x34, 0x56, 0x78]

    func run() async throws {
        let fileLimit = raiseOpenFileLimit(to: 1_048_576)
        // Each tunnel is two sockets in the relay and two here; keep room for the rest of the descriptors.
        let tunnels = min(self.tunnels, (fileLimit - 100) / 2)
        let relayProcess = try RelayProcess(
            path: try RelayProcess.executable(relay),
            arguments: [
                "--threads", String(relayThreads), "--max-tunnels", "1000000",
                "--max-connections-per-address", "1000000", "--max-messages-per-side", "1000000000",
                "--tunnel-lifetime", "3600", "--idle-timeout", "3600", "--log-level", "warning",
            ])
        defer { relayProcess.stop() }
        let port = relayProcess.port
        let pid = relayProcess.pid
        print("passkey-bench relay: passkey-relay pid \(pid) on port \(port), \(relayThreads) relay threads,")
        print("  \(clientThreads) load-generator threads, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        if tunnels < self.tunnels {
            print(
                "  open files are limited to \(fileLimit) per process (no CAP_SYS_RESOURCE to raise the hard limit),"
                    + " so \(tunnels) of the \(self.tunnels) idle tunnels asked for")
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: clientThreads)
        let generator = LoadGenerator(group: group, port: port)
        let failures: [String]
        do {
            failures = try await measure(generator, pid: pid, tunnels: tunnels, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
        let status = relayProcess.stop()
        print("")
        print("passkey-relay exited with status \(status) after SIGTERM")
        if !failures.isEmpty {
            print("targets not met: \(failures.joined(separator: ", "))")
            throw ExitCode(2)
        }
    }

    /// The three measurements; returns the targets missed.
    private func measure(_ generator: LoadGenerator, pid: Int32, tunnels: Int, group: MultiThreadedEventLoopGroup)
        async throws -> [String]
    {
        var failures: [String] = []

        // 1. Idle tunnels (skipped with --tunnels 0).
        if tunnels > 0 {
            let before = try Self.residentKiB(pid)
            let start = ContinuousClock.now
            let idle = try await generator.openTunnels(tunnels, role: .idle)
            let opened = ContinuousClock.now - start
            try await Task.sleep(for: .milliseconds(500))
            let after = try Self.residentKiB(pid)
            let perTunnel = Double(after - before) * 1024 / Double(tunnels)
            print("")
            print("idle tunnels")
            print("  opened \(tunnels) paired tunnels (\(2 * tunnels) sockets) in \(Self.format(opened))")
            print("  relay VmRSS \(before) KiB before, \(after) KiB after")
            let memoryMet = perTunnel <= 16 * 1024
            print(
                String(
                    format: "  %.0f bytes (%.1f KiB) per paired tunnel (target ≤ 16 KiB: %@)", perTunnel,
                    perTunnel / 1024,
                    memoryMet ? "met" : "NOT MET"))
            if !memoryMet { failures.append("memory per tunnel") }
            try await generator.close(idle)
            try await generator.waitForRelayToDrain()
        }

        // 2. Throughput.
        let counter = MessageCounter()
        let busy = try await generator.openTunnels(throughputTunnels, role: .echo(counter))
        for pair in busy {
            pair.client.eventLoop.execute { LoadGenerator.sendFrames(window, on: pair.client) }
        }
        try await Task.sleep(for: .seconds(1))  // warm-up
        let counted = counter.value.load(ordering: .relaxed)
        let clock = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let elapsed = ContinuousClock.now - clock
        let messages = counter.value.load(ordering: .relaxed) - counted
        let throughput = Double(messages) / Self.seconds(elapsed)
        let throughputMet = throughput >= 50_000
        print("")
        print("throughput (\(throughputTunnels) tunnels, \(window) messages of 256 bytes in flight each, echoed)")
        print(
            "  \(Self.format(throughput)) relayed messages/s, \(Self.format(throughput * 256 / 1_048_576)) MiB/s of payload"
                + " (target ≥ 50,000/s: \(throughputMet ? "met" : "NOT MET"))")
        if !throughputMet { failures.append("relayed messages/s") }
        try await generator.close(busy)
        try await generator.waitForRelayToDrain()

        // 3. Paced latency.
        let samples = LatencySamples()
        let paced = try await generator.openTunnels(latencyTunnels, role: .latency(samples))
        let pacer = Pacer(tunnels: paced.map(\.client), rate: rate)
        try await pacer.run(for: .seconds(seconds + 0.5), on: group.next())
        try await Task.sleep(for: .milliseconds(100))
        let all = samples.drain()
        let skipped = min(all.count, rate / 2)  // the first half second warms up
        let sorted = all.dropFirst(skipped).sorted()
        guard !sorted.isEmpty else { throw BenchError("no latency samples") }
        func percentile(_ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
        }
        let p99 = percentile(0.99)
        let latencyMet = p99 <= 2000
        print("")
        print(
            "latency at \(Self.format(Double(rate))) messages/s over \(latencyTunnels) tunnels (\(sorted.count) samples)"
        )
        print(
            String(
                format: "  p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, p99.9 %.0f µs, max %.0f µs (target p99 ≤ 2 ms: %@)",
                percentile(0.5), percentile(0.9), p99, percentile(0.999), Double(sorted.last!) / 1000,
                latencyMet ? "met" : "NOT MET"))
        print(String(format: "  sent %.0f messages/s as paced", Double(pacer.sentCount) / (seconds + 0.5)))
        if !latencyMet { failures.append("p99 latency") }
        try await generator.close(paced)

        return failures
    }

    static func residentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let value = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        else { throw BenchError("no VmRSS for pid \(pid)") }
        return value
    }

    static func format(_ duration: Duration) -> String { String(format: "%.2f s", seconds(duration)) }
    static func format(_ value: Double) -> String { AuthenticatorBench.format(value) }
    static func seconds(_ duration: Duration) -> Double { AuthenticatorBench.seconds(duration) }

    /// Sets the soft and hard limits on open files (as root with CAP_SYS_RESOURCE the hard limit can go up
    /// to `nr_open`; without it, the soft limit goes up to the hard one) and returns the soft limit in force.
    /// passkey-relay, started afterwards, inherits it.
    func raiseOpenFileLimit(to wanted: rlim_t) -> Int {
        var limit = rlimit()
        guard getrlimit(openFilesResource, &limit) == 0 else { return 1024 }
        var raised = rlimit(rlim_cur: max(limit.rlim_cur, wanted), rlim_max: max(limit.rlim_max, wanted))
        if setrlimit(openFilesResource, &raised) != 0 {
            raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            _ = setrlimit(openFilesResource, &raised)
        }
        guard getrlimit(openFilesResource, &limit) == 0 else { return 1024 }
        return Int(limit.rlim_cur)
    }
}

#if os(Linux)
    let openFilesResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
    let openFilesResource = RLIMIT_NOFILE
#endif

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
            if body.contains("\nrelay_tunnels_open 0\n") && body.contains("\nrelay_connections_open 1\n") { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("the relay still holds tunnels 30 s after they were closed")
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
        let end = start + UInt64(RelayBench.seconds(duration) * 1e9)
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
