import Basics
import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// `Tools/bench relay-flood`: `passkey-relay`'s memory while clients ping it without reading (issue 10).
///
/// `--connections` clients on unpaired `/cable/new/…` tunnels send masked pings as fast as their socket takes
/// them and never read, for `--seconds`; a client the relay closes connects again. Every second the bench
/// prints the relay's VmRSS and the time of one normal exchange beside the flood (open a tunnel, join it,
/// deliver one message); at the end VmRSS again, after the flooders have gone, and VmHWM (the peak).
struct RelayFloodBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-flood",
        abstract: "passkey-relay's memory and a normal exchange's latency while clients ping without reading."
    )

    @Option(help: "Clients that ping without reading.") var connections = 8
    @Option(help: "Seconds the flood lasts.") var seconds: Double = 20
    @Option(help: "Pings each client sends per second, at most (in batches every 10 ms).") var rate = 20_000
    @Option(help: "Event loop threads of the relay.") var relayThreads = 2
    @Option(help: "Path of passkey-relay (default: next to passkey-bench).") var relay: String?
    @Option(
        help: ArgumentHelp(
            "A flag for passkey-relay, such as --relay-arg=--max-overhead-frames=100000000 (repeatable).",
            valueName: "flag"))
    var relayArg: [String] = []

    @Option(help: "Payload bytes of each ping, 0–125 (each pong carries the same).") var payload = 125

    /// A masked ping with `payload` bytes.
    static func ping(payload: Int) -> [UInt8] {
        let count = min(max(payload, 0), 125)
        return [0x89, 0x80 | UInt8(count)] + RelayBench.maskKey
            + (0..<count).map { UInt8(truncatingIfNeeded: $0) ^ RelayBench.maskKey[$0 % 4] }
    }

    func run() async throws {
        let relayPath = try RelayProcess.executable(relay)
        let relayProcess = try RelayProcess(
            path: relayPath,
            arguments: ["--threads", String(relayThreads), "--log-level", "warning"] + relayArg)
        defer { relayProcess.stop() }
        let port = relayProcess.port
        let pid = relayProcess.pid
        say("passkey-bench relay-flood: \(relayPath) (pid \(pid)) \(relayArg.joined(separator: " "))")
        say(
            "  \(connections) clients ping /cable/new/… without reading for \(Self.format(seconds)) s, "
                + "up to \(rate) pings/s each, \(min(max(payload, 0), 125)) payload bytes")

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        do {
            try await measure(pid: pid, port: port, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
    }

    private func measure(pid: Int32, port: Int, group: MultiThreadedEventLoopGroup) async throws {
        let generator = LoadGenerator(group: group, port: port)
        var warmUp: [Double] = []
        for _ in 0..<5 { warmUp.append(try await Self.exchange(generator)) }
        let before = try Self.memory(pid)
        say(
            "  before:  VmRSS \(Self.mebibytes(before.rss)) MiB, normal exchange median "
                + "\(Self.format(Self.median(warmUp))) ms")

        let floodGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { floodGroup.shutdownGracefully { _ in } }
        let flood = Flood(
            group: floodGroup, port: port, source: "127.0.1.1", batch: max(1, rate / 100),
            ping: Self.ping(payload: payload))
        let deadline = ContinuousClock.now + .seconds(seconds)
        let flooders = (0..<connections).map { _ in Task { await flood.run(until: deadline) } }
        let latencies = Mutex<[Double]>([])
        let exchanges = Task {
            while ContinuousClock.now < deadline {
                let latency = (try? await Self.exchange(generator, timeout: .seconds(30))) ?? 30_000
                latencies.withLock { $0.append(latency) }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        var second = 0
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
            second += 1
            let now = try Self.memory(pid)
            let latest = latencies.withLock { $0.last }.map { Self.format($0) + " ms" } ?? "none finished yet"
            say(
                "  t=\(second)s: VmRSS \(Self.mebibytes(now.rss)) MiB, latest normal exchange \(latest), "
                    + "\(flood.pings.load(ordering: .relaxed)) pings written, "
                    + "\(flood.connects.load(ordering: .relaxed)) flood connections")
        }
        let peak = try Self.memory(pid)
        flood.stop()
        for flooder in flooders { await flooder.value }
        await exchanges.value
        let measured = latencies.withLock { $0 }
        try await Task.sleep(for: .seconds(2))
        let after = try Self.memory(pid)
        say(
            "  during:  VmRSS \(Self.mebibytes(peak.rss)) MiB at the end of the flood; \(measured.count) normal "
                + "exchanges, median \(Self.format(Self.median(measured))) ms, max \(Self.format(measured.max() ?? 0)) ms "
                + "(30000 = timed out)")
        say(
            "  after:   VmRSS \(Self.mebibytes(after.rss)) MiB (2 s after the flooders left), "
                + "VmHWM \(Self.mebibytes(after.hwm)) MiB")
        say(
            "  flood:   \(flood.pings.load(ordering: .relaxed)) pings written over "
                + "\(flood.connects.load(ordering: .relaxed)) connections")
    }

    /// ``exchange(_:)``, or an error after `timeout` (the exchange is left to finish on its own).
    static func exchange(_ generator: LoadGenerator, timeout: Duration) async throws -> Double {
        let outcome = Mutex<Result<Double, BenchError>?>(nil)
        Task {
            let result: Result<Double, BenchError>
            do {
                result = .success(try await exchange(generator))
            } catch {
                result = .failure(BenchError("\(error)"))
            }
            outcome.withLock { $0 = result }
        }
        let start = ContinuousClock.now
        while ContinuousClock.now - start < timeout {
            if let result = outcome.withLock({ $0 }) { return try result.get() }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw BenchError("no exchange within \(timeout)")
    }

    /// Opens a tunnel, joins it and delivers one message through it; returns the milliseconds that took.
    static func exchange(_ generator: LoadGenerator) async throws -> Double {
        let samples = LatencySamples()
        let start = ContinuousClock.now
        let pairs = try await generator.openTunnels(1, role: .latency(samples))
        pairs[0].client.writeAndFlush(pairs[0].client.allocator.buffer(bytes: LoadGenerator.frame), promise: nil)
        while samples.drain().isEmpty {
            guard ContinuousClock.now - start < .seconds(30) else { throw BenchError("no message in 30 s") }
            try await Task.sleep(for: .milliseconds(1))
        }
        let elapsed = ContinuousClock.now - start
        try await generator.close(pairs)
        return elapsed.inSeconds * 1000
    }

    /// VmRSS and VmHWM of a process, in KiB.
    static func memory(_ pid: Int32) throws -> (rss: Int, hwm: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) throws -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
                let value = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
            else { throw BenchError("no \(name) for pid \(pid)") }
            return value
        }
        return (try field("VmRSS"), try field("VmHWM"))
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }

    static func mebibytes(_ kibibytes: Int) -> String { String(format: "%.1f", Double(kibibytes) / 1024) }
    static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}

/// Prints one line at once, also into a pipe (where `print` would buffer it).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The flooding clients: each connects, asks for `/cable/new/…`, then writes pings whenever its socket takes
/// them, and never reads (autoRead off). When the relay closes it, it connects again.
final class Flood: Sendable {
    let group: MultiThreadedEventLoopGroup
    let port: Int
    let source: String
    /// Pings written every 10 ms.
    let batch: Int
    /// One ping frame.
    let ping: [UInt8]
    let pings = Atomic<Int>(0)
    let connects = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    init(group: MultiThreadedEventLoopGroup, port: Int, source: String, batch: Int, ping: [UInt8]) {
        self.batch = batch
        self.ping = ping
        self.group = group
        self.port = port
        self.source = source
    }

    func run(until deadline: ContinuousClock.Instant) async {
        while !stopped.load(ordering: .relaxed), ContinuousClock.now < deadline {
            do {
                let channel = try await connect()
                connects.add(1, ordering: .relaxed)
                channels.withLock { $0[ObjectIdentifier(channel)] = channel }
                if stopped.load(ordering: .relaxed) { channel.close(promise: nil) }
                try? await channel.closeFuture.get()
                channels.withLock { $0[ObjectIdentifier(channel)] = nil }
            } catch {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        for channel in channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }

    private func connect() async throws -> any Channel {
        let tunnelID = (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
        let request =
            "GET /cable/new/\(tunnelID) HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: fido.cable\r\n\r\n"
        return try await ClientBootstrap(group: group)
            .channelOption(.autoRead, value: false)
            // A small receive buffer, as a peer that never reads soon has: the pongs then wait in the relay.
            .channelOption(.socketOption(.so_rcvbuf), value: 4096)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(PingPump(request: request, flood: self))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
    }

    /// Writes the upgrade request, then pings in batches while the channel is writable.
    private final class PingPump: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let request: String
        let flood: Flood

        init(request: String, flood: Flood) {
            self.request = request
            self.flood = flood
        }

        func channelActive(context: ChannelHandlerContext) {
            context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: request)), promise: nil)
            pump(context: context)
            context.fireChannelActive()
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            pump(context: context)
            context.fireChannelWritabilityChanged()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

        /// One batch every 10 ms, and none while the socket takes no more: then `channelWritabilityChanged`
        /// starts it again.
        private func pump(context: ChannelHandlerContext) {
            guard context.channel.isActive, context.channel.isWritable else { return }
            var buffer = context.channel.allocator.buffer(capacity: flood.batch * flood.ping.count)
            for _ in 0..<flood.batch { buffer.writeBytes(flood.ping) }
            context.writeAndFlush(NIOAny(buffer), promise: nil)
            flood.pings.add(flood.batch, ordering: .relaxed)
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(10)) { bound.value.0.pump(context: bound.value.1) }
        }
    }
}
