import Basics
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
///
/// With `--cluster N`, the same three figures for N instances behind HAProxy, beside a TCP-splice ceiling
/// (`RelayClusterBench`).
struct RelayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Idle-tunnel memory, relayed messages/s and added latency of passkey-relay."
    )

    @Option(help: "Paired idle tunnels for the memory figure (default 10,000; with --cluster 20,000, held throughout).")
    var tunnels: Int?
    @Option(help: "Tunnels for the throughput figure.") var throughputTunnels = 64
    @Option(help: "Messages in flight per throughput tunnel.") var window = 16
    @Option(help: "Seconds per throughput and latency run.") var seconds: Double = 5
    @Option(help: "Messages per second in the paced latency run.") var rate = 10_000
    @Option(help: "Tunnels for the latency run.") var latencyTunnels = 100
    @Option(help: "Event loop threads of the relay (default 2; with --cluster 1 per instance).") var relayThreads: Int?
    @Option(help: "Event loop threads of the load generator.") var clientThreads = 2
    @Option(help: "Path of passkey-relay (default: next to passkey-bench).") var relay: String?
    @Option(
        help: ArgumentHelp(
            "Measure N passkey-relay instances behind HAProxy (Tools/relay-cluster) beside a TCP-splice ceiling.",
            valueName: "n"))
    var cluster: Int?
    @Option(help: "With --cluster: HAProxy processes sharing the balancer's port (SO_REUSEPORT).")
    var balancerProcesses = 8
    @Option(help: "With --cluster: load-generator processes.") var generatorProcesses = 5
    @Option(
        help: "With --cluster: the balancer's port; the relays take the next N, the ceiling's HAProxy the one after.")
    var clusterPort = 28080
    @Option(help: "With --cluster: Tools/relay-cluster (default: found from the working directory or this executable).")
    var clusterScript: String?

    static let payloadSize = 256
    /// A server frame of a 256-byte message: 2 header bytes, a 16-bit length, the payload.
    static let serverFrameSize = 4 + payloadSize
    static let maskKey: [UInt8] = [0x12, 0x34, 0x56, 0x78]

    func validate() throws {
        if let cluster, cluster < 1 { throw ValidationError("--cluster must be at least 1") }
        guard balancerProcesses >= 1, generatorProcesses >= 1 else {
            throw ValidationError("--balancer-processes and --generator-processes must be at least 1")
        }
    }

    func run() async throws {
        if let cluster {
            let bench = RelayClusterBench(
                instances: cluster, tunnels: tunnels ?? 20_000, balancerProcesses: balancerProcesses,
                generatorProcesses: generatorProcesses, throughputTunnels: throughputTunnels, window: window,
                seconds: seconds, rate: rate, latencyTunnels: latencyTunnels, relayThreads: relayThreads ?? 1,
                relay: try RelayProcess.executable(relay), clusterScript: clusterScript, port: clusterPort)
            try await bench.run()
            return
        }
        let relayThreads = self.relayThreads ?? 2
        let fileLimit = Self.raiseOpenFileLimit(to: 1_048_576)
        // Each tunnel is two sockets in the relay and two here; keep room for the rest of the descriptors.
        let wanted = self.tunnels ?? 10_000
        let tunnels = min(wanted, (fileLimit - 100) / 2)
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
        if tunnels < wanted {
            print(
                "  open files are limited to \(fileLimit) per process (no CAP_SYS_RESOURCE to raise the hard limit),"
                    + " so \(tunnels) of the \(wanted) idle tunnels asked for")
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
        print("passkey-relay exited with status \(status) after SIGINT")
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
        let throughput = Double(messages) / elapsed.inSeconds
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

    static func format(_ duration: Duration) -> String { String(format: "%.2f s", duration.inSeconds) }
    static func format(_ value: Double) -> String { AuthenticatorBench.format(value) }

    /// Sets the soft and hard limits on open files (as root with CAP_SYS_RESOURCE the hard limit can go up
    /// to `nr_open`; without it, the soft limit goes up to the hard one) and returns the soft limit in force.
    /// passkey-relay, started afterwards, inherits it.
    static func raiseOpenFileLimit(to wanted: rlim_t) -> Int {
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
