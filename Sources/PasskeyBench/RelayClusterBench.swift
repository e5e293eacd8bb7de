import ArgumentParser
import Basics
import Foundation

/// `Tools/bench relay --cluster N`: N `passkey-relay` instances behind HAProxy, and in the same run the same load
/// through HAProxy in TCP mode splicing to a trivial echo-pair server: the ceiling for any WebSocket relay here.
///
/// Every process here may hold at most 20,000 open files, so the balancer tier runs as several HAProxy processes
/// sharing the port (SO_REUSEPORT; a proxied tunnel costs HAProxy four descriptors) and the load generator as
/// several processes (`passkey-bench relay-cluster-worker`, a tunnel costs it two), driven over pipes
/// (`WorkerCommand`). On each path:
///
/// 1. Held tunnels: `--tunnels` pairings through the balancer, `--generator-processes` × `lanes` at a time;
///    resident memory of the servers (relays or echo-pair servers) and of HAProxy per paired tunnel.
/// 2. Throughput: `--throughput-tunnels` tunnels keep `--window` 256-byte messages in flight each, echoed.
/// 3. Latency: `--rate` stamped messages a second in all, over `--latency-tunnels` tunnels; one-way times.
///
/// The held tunnels stay open during 2 and 3. With two or more cores the generators run on CPU 0 and everything
/// they load (HAProxy, the relays or the echo-pair servers) on CPU 1, with `taskset`.
struct RelayClusterBench {
    var instances: Int
    var tunnels: Int
    var balancerProcesses: Int
    var generatorProcesses: Int
    var throughputTunnels: Int
    var window: Int
    var seconds: Double
    var rate: Int
    var latencyTunnels: Int
    var relayThreads: Int
    var relay: String
    var clusterScript: String?
    var port: Int
    /// Pairings being opened at once by each generator process.
    var lanes = 16

    /// What one path measured; nil where a phase failed.
    struct Figures {
        var paired = 0
        var failed = 0
        var openSeconds = 0.0
        var errors: [String] = []
        var spread: [String: Int] = [:]
        var serverBytesPerTunnel: Double?
        var balancerBytesPerTunnel: Double?
        /// Most descriptors open in one process of each tier while the tunnels were held.
        var serverFiles = 0
        var balancerFiles = 0
        var generatorFiles = 0
        var throughput: Double?
        var latency: LatencySummary?
        var sentRate: Double?
        /// Share of one core each tier used during the throughput phase (its warm-up and opening included).
        var throughputCPU: (servers: Double, balancers: Double, generators: Double)?
    }

    /// The largest p99 (µs) of the splice baseline's latency under which an added p99 of 2 ms can be told at all.
    static let measurableBaselineP99 = 1000.0

    /// Which CPUs the load generators and the loaded processes run on (`taskset -c`), or nil for no pinning.
    var pinning: (generators: String, cluster: String)? {
        ProcessInfo.processInfo.activeProcessorCount >= 2 ? ("0", "1") : nil
    }

    func run() async throws {
        ChildProcess.stopAllOnSignals()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-cluster-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = try clusterScriptPath()
        printPlan(directory: directory.path)
        let relayFigures: Figures
        let ceilingFigures: Figures
        do {
            writeLine("")
            writeLine("relay cluster: \(instances) passkey-relay instances behind \(balancerProcesses) HAProxies")
            relayFigures = try await measureRelayCluster(script: script, directory: directory.path)
            ChildProcess.forgetStopped()
            writeLine("")
            writeLine("TCP-splice ceiling: \(instances) echo-pair servers behind \(balancerProcesses) HAProxies")
            ceilingFigures = try await measureCeiling(directory: directory.path)
        } catch {
            ChildProcess.stopAll()
            writeLine("logs kept in \(directory.path)")
            throw error
        }
        ChildProcess.stopAll()
        let missed = report(relay: relayFigures, ceiling: ceilingFigures)
        try? FileManager.default.removeItem(at: directory)
        if !missed.isEmpty {
            writeLine("targets not met: \(missed.joined(separator: ", "))")
            throw ExitCode(2)
        }
    }

    // MARK: The two paths

    private func measureRelayCluster(script: String, directory: String) async throws -> Figures {
        let relayArguments = [
            "--threads=\(relayThreads)", "--max-tunnels=1000000", "--max-connections-per-address=1000000",
            "--max-pending-connections=100000", "--max-messages-per-side=1000000000", "--tunnel-lifetime=3600",
            "--idle-timeout=3600", "--log-level=warning",
        ]
        let log = directory + "/relay-cluster.log"
        let cluster = try ChildProcess(
            name: "Tools/relay-cluster",
            arguments: pinned(to: pinning?.cluster)
                + [
                    script, "--balancer", "haproxy", "--instances", String(instances), "--port", String(port),
                    "--relay", relay, "--dir", directory + "/relay-cluster", "--balancer-processes",
                    String(balancerProcesses),
                    // The whole load comes from 127.0.0.2–9, one source network: no per-network limit at HAProxy.
                    "--max-connections-per-network", "0", "--max-rate-per-network", "0",
                ] + relayArguments.map { "--relay-arg=" + $0 },
            pipes: true, log: log)
        while true {
            let line: String
            do {
                line = try await cluster.readLine()
            } catch {
                throw BenchError("Tools/relay-cluster did not start: \(Self.tail(of: log))")
            }
            if line.hasPrefix("listening on ") { break }
        }
        let relayPIDs = try (1...instances).map { try Self.pid(in: "\(directory)/relay-cluster/relay-\($0).pid") }
        let balancerPIDs = try (1...balancerProcesses).map {
            try Self.pid(in: "\(directory)/relay-cluster/haproxy-\($0).pid")
        }
        writeLine(
            "  Tools/relay-cluster pid \(cluster.pid): relays \(Self.list(relayPIDs)), HAProxy \(Self.list(balancerPIDs))"
        )
        let figures = try await measure(kind: .relay, port: port, servers: relayPIDs, balancers: balancerPIDs)
        cluster.stop()
        return figures
    }

    private func measureCeiling(directory: String) async throws -> Figures {
        let ceilingPort = port + instances + 1
        var servers: [ChildProcess] = []
        var serverPorts: [Int] = []
        let executable = Self.ownExecutable
        for index in 1...instances {
            let server = try ChildProcess(
                name: "echo-pair server \(index)",
                arguments: pinned(to: pinning?.cluster) + [executable, "echo-pair-server", "--index", String(index)],
                pipes: true)
            let line = try await server.readLine()
            guard line.hasPrefix("listening on 127.0.0.1:"), let serverPort = Int(line.split(separator: ":").last!)
            else { throw BenchError("echo-pair server \(index) did not start: \(line)") }
            servers.append(server)
            serverPorts.append(serverPort)
        }
        let config = directory + "/ceiling-haproxy.cfg"
        try Self.ceilingConfiguration(port: ceilingPort, servers: serverPorts)
            .write(toFile: config, atomically: true, encoding: .utf8)
        var balancers: [ChildProcess] = []
        for index in 1...balancerProcesses {
            balancers.append(
                try ChildProcess(
                    name: "HAProxy \(index) (ceiling)",
                    arguments: pinned(to: pinning?.cluster) + ["haproxy", "-db", "-f", config], pipes: false,
                    log: directory + "/ceiling-haproxy.log"))
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !Self.acceptsConnections(port: ceilingPort) || balancers.contains(where: { !$0.isRunning }) {
            guard ContinuousClock.now < deadline, balancers.allSatisfy(\.isRunning) else {
                throw BenchError(
                    "HAProxy (ceiling) did not start: \(Self.tail(of: directory + "/ceiling-haproxy.log"))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(500))  // every process listening
        writeLine(
            "  echo-pair servers \(Self.list(servers.map(\.pid))) on ports \(Self.list(serverPorts)), "
                + "HAProxy \(Self.list(balancers.map(\.pid))) on port \(ceilingPort)")
        let figures = try await measure(
            kind: .echoPair, port: ceilingPort, servers: servers.map(\.pid), balancers: balancers.map(\.pid))
        for balancer in balancers { balancer.stop() }
        for server in servers { server.stop() }
        return figures
    }

    /// HAProxy in TCP mode: waits for each connection's first line (`{tunnel ID}A` or `C`, 34 bytes), picks the
    /// echo-pair server by a hash of the tunnel ID, so both sides of a tunnel meet on one server, and splices.
    /// (`balance hash req.payload(0,32)` alone falls back to round robin in HAProxy 2.6: the ID goes through a
    /// variable set once the line is there.)
    static func ceilingConfiguration(port: Int, servers: [Int]) -> String {
        var lines = [
            "# Written by passkey-bench relay --cluster: the TCP-splice ceiling.",
            "global",
            "    maxconn 8000",
            "    # Splicing takes a pipe (two descriptors) per transfer under way; the default, maxconn / 4, would not",
            "    # leave the 20,000 files a process may open for the connections.",
            "    maxpipes 500",
            "    nbthread 1",
            "",
            "defaults",
            "    mode tcp",
            "    timeout connect 5s",
            "    timeout client 3600s",
            "    timeout server 3600s",
            "    option splice-auto",
            "",
            "frontend pairs",
            "    bind 127.0.0.1:\(port)",
            "    tcp-request inspect-delay 5s",
            "    tcp-request content set-var(txn.tunnel) req.payload(0,32) if { req.len ge \(EchoPairHandler.lineLength) }",
            "    tcp-request content accept if { var(txn.tunnel) -m found }",
            "    default_backend pairs",
            "",
            "backend pairs",
            "    balance hash var(txn.tunnel)",
        ]
        for (index, serverPort) in servers.enumerated() {
            lines.append("    server pair\(index + 1) 127.0.0.1:\(serverPort)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Starts the generator processes and runs the three phases through the balancer on `port`.
    private func measure(kind: TunnelKind, port: Int, servers: [pid_t], balancers: [pid_t]) async throws -> Figures {
        let executable = Self.ownExecutable
        let workers = try (1...generatorProcesses).map { index in
            try ChildProcess(
                name: "generator \(index)",
                arguments: pinned(to: pinning?.generators)
                    + [
                        executable, "relay-cluster-worker", "--port", String(port), "--kind", kind.rawValue,
                        "--lanes", String(lanes),
                    ],
                pipes: true)
        }
        defer {
            for worker in workers { try? worker.send(WorkerCommand.quit.line) }
            for worker in workers { worker.stop(grace: .seconds(20)) }
        }
        var figures = Figures()

        // 1. Held tunnels.
        let serversBefore = try servers.map(RelayBench.residentKiB).reduce(0, +)
        let balancersBefore = try balancers.map(RelayBench.residentKiB).reduce(0, +)
        let opened = try await ask(workers, Self.shares(of: tunnels, over: workers.count).map { .open(tunnels: $0) })
        for reply in opened {
            guard case .opened(let paired, let failed, let seconds, let spread, let firstError) = reply else {
                throw BenchError("unexpected answer to open: \(reply.line.prefix(80))")
            }
            figures.paired += paired
            figures.failed += failed
            figures.openSeconds = max(figures.openSeconds, seconds)
            figures.spread.merge(spread, uniquingKeysWith: +)
            if let firstError { figures.errors.append(firstError) }
        }
        try await Task.sleep(for: .seconds(1))
        let serversAfter = try servers.map(RelayBench.residentKiB).reduce(0, +)
        let balancersAfter = try balancers.map(RelayBench.residentKiB).reduce(0, +)
        if figures.paired > 0 {
            figures.serverBytesPerTunnel = Double(serversAfter - serversBefore) * 1024 / Double(figures.paired)
            figures.balancerBytesPerTunnel = Double(balancersAfter - balancersBefore) * 1024 / Double(figures.paired)
        }
        figures.serverFiles = servers.map(Self.openFiles).max() ?? 0
        figures.balancerFiles = balancers.map(Self.openFiles).max() ?? 0
        figures.generatorFiles = workers.map { Self.openFiles($0.pid) }.max() ?? 0
        writeLine(
            "  held: \(Self.format(Double(figures.paired))) of \(Self.format(Double(tunnels))) tunnels paired in "
                + String(format: "%.1f s", figures.openSeconds) + ", \(figures.failed) failed"
                + (figures.errors.first.map { " (first: \($0))" } ?? ""))
        writeLine(
            "  spread: "
                + figures.spread.sorted { $0.key < $1.key }.map { "\($0.key): \(Self.format(Double($0.value)))" }
                .joined(separator: ", "))
        writeLine(
            "  VmRSS: servers \(serversBefore / 1024) → \(serversAfter / 1024) MiB, HAProxy \(balancersBefore / 1024) → "
                + "\(balancersAfter / 1024) MiB; most open files in one process: server \(figures.serverFiles), "
                + "HAProxy \(figures.balancerFiles), generator \(figures.generatorFiles)")

        // 2. Throughput.
        let throughputShares = Self.shares(of: throughputTunnels, over: workers.count)
        let generators = workers.map(\.pid)
        let cpuBefore = [servers, balancers, generators].map(Self.cpuTicks)
        let throughputStart = ContinuousClock.now
        let counted = try await ask(
            workers, throughputShares.map { .throughput(tunnels: $0, window: window, seconds: seconds) })
        let wall = (ContinuousClock.now - throughputStart).inSeconds
        let cpu = zip([servers, balancers, generators].map(Self.cpuTicks), cpuBefore).map {
            Double($0 - $1) / Self.ticksPerSecond / wall
        }
        figures.throughputCPU = (cpu[0], cpu[1], cpu[2])
        var messages = 0
        var elapsed = 0.0
        for reply in counted {
            switch reply {
            case .throughput(let count, let seconds):
                messages += count
                elapsed = max(elapsed, seconds)
            case .failed(let reason): figures.errors.append("throughput: \(reason)")
            default: throw BenchError("unexpected answer to throughput: \(reply.line.prefix(80))")
            }
        }
        if counted.allSatisfy({ if case .throughput = $0 { true } else { false } }), elapsed > 0 {
            figures.throughput = Double(messages) / elapsed
            writeLine(
                "  throughput: \(Self.format(Double(messages) / elapsed)) messages/s; CPU (share of one core): "
                    + String(format: "servers %.2f, HAProxy %.2f, generators %.2f", cpu[0], cpu[1], cpu[2]))
        }

        // 3. Latency.
        let rates = Self.shares(of: rate, over: workers.count)
        let latencyShares = Self.shares(of: max(latencyTunnels, workers.count), over: workers.count)
        let measured = try await ask(
            workers,
            zip(latencyShares, rates).map { .latency(tunnels: $0, rate: $1, seconds: seconds) })
        var samples: [UInt64] = []
        var sent = 0
        var complete = true
        for reply in measured {
            switch reply {
            case .latency(let count, let values):
                sent += count
                samples += values
            case .failed(let reason):
                figures.errors.append("latency: \(reason)")
                complete = false
            default: throw BenchError("unexpected answer to latency: \(reply.line.prefix(80))")
            }
        }
        if complete {
            figures.latency = LatencySummary(nanoseconds: samples)
            figures.sentRate = Double(sent) / (seconds + 0.5)
            if let latency = figures.latency {
                writeLine(
                    String(
                        format:
                            "  latency: %d samples, p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, p99.9 %.0f µs, max %.0f µs",
                        latency.count, latency.p50, latency.p90, latency.p99, latency.p999, latency.max))
            }
        }
        _ = try await ask(workers, workers.map { _ in .close })
        return figures
    }

    /// Sends one command to each worker, then waits for all their answers.
    private func ask(_ workers: [ChildProcess], _ commands: [WorkerCommand]) async throws -> [WorkerReply] {
        for (worker, command) in zip(workers, commands) { try worker.send(command.line) }
        return try await withThrowingTaskGroup(of: (Int, WorkerReply).self) { tasks in
            for (index, worker) in workers.enumerated() {
                tasks.addTask { (index, try WorkerReply(line: try await worker.readLine())) }
            }
            var replies = [WorkerReply?](repeating: nil, count: workers.count)
            for try await (index, reply) in tasks { replies[index] = reply }
            return replies.compactMap { $0 }
        }
    }

    // MARK: The report

    /// Prints the table and the targets; returns the targets missed.
    private func report(relay: Figures, ceiling: Figures) -> [String] {
        func count(_ figures: Figures) -> String {
            "\(Self.format(Double(figures.paired))) / \(Self.format(Double(tunnels)))"
        }
        func perSecond(_ value: Double?) -> String { value.map { Self.format($0) } ?? "failed" }
        func micro(_ value: Double?) -> String { value.map { String(format: "%.0f µs", $0) } ?? "failed" }
        func memory(_ value: Double?) -> String { value.map { String(format: "%.1f KiB", $0 / 1024) } ?? "-" }
        let throughputRatio = relay.throughput.flatMap { relay in ceiling.throughput.map { relay / $0 } }
        let rows: [(String, String, String, String)] = [
            ("held tunnels (paired / target)", count(relay), count(ceiling), ""),
            (
                "relayed messages/s (256 B, echoed)", perSecond(relay.throughput), perSecond(ceiling.throughput),
                throughputRatio.map { String(format: "%.2f", $0) } ?? "-"
            ),
            ("latency p50 (one-way)", micro(relay.latency?.p50), micro(ceiling.latency?.p50), ""),
            ("latency p99 (one-way)", micro(relay.latency?.p99), micro(ceiling.latency?.p99), ""),
            ("latency max (one-way)", micro(relay.latency?.max), micro(ceiling.latency?.max), ""),
            (
                "server memory per tunnel (VmRSS)", memory(relay.serverBytesPerTunnel),
                memory(ceiling.serverBytesPerTunnel), ""
            ),
            (
                "HAProxy memory per tunnel (VmRSS)", memory(relay.balancerBytesPerTunnel),
                memory(ceiling.balancerBytesPerTunnel), ""
            ),
        ]
        writeLine("")
        writeLine(
            "\(instances) relays, \(balancerProcesses) HAProxy processes, \(generatorProcesses) generator processes; "
                + (pinning.map { "generators on CPU \($0.generators), HAProxy and servers on CPU \($0.cluster)" }
                    ?? "no pinning (one core)"))
        writeLine(
            "latency at \(Self.format(Double(rate))) messages/s in all (sent: relay \(perSecond(relay.sentRate))/s, "
                + "ceiling \(perSecond(ceiling.sentRate))/s)")
        writeLine("")
        let widths = [36, 18, 20, 6]
        func line(_ cells: [String]) {
            var text = zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: " ")
            while text.last == " " { text.removeLast() }
            writeLine(text)
        }
        line(["", "relay via HAProxy", "TCP-splice ceiling", "ratio"])
        for row in rows { line([row.0, row.1, row.2, row.3]) }
        for (label, figures) in [("relay", relay), ("ceiling", ceiling)] where !figures.errors.isEmpty {
            writeLine("\(label) errors: \(figures.errors.joined(separator: "; "))")
        }

        writeLine("")
        var missed: [String] = []
        let heldMet = relay.paired >= 20_000
        writeLine("held tunnels ≥ 20,000 through the relay cluster: \(heldMet ? "met" : "NOT MET") (\(count(relay)))")
        if !heldMet { missed.append("held tunnels") }
        let throughputMet = (throughputRatio ?? 0) >= 0.5
        writeLine(
            "throughput ≥ 0.5 × the TCP-splice ceiling: \(throughputMet ? "met" : "NOT MET") ("
                + (throughputRatio.map { String(format: "%.2f", $0) } ?? "no figure") + ")")
        if !throughputMet { missed.append("throughput ratio") }
        if let relayP99 = relay.latency?.p99, let ceilingP99 = ceiling.latency?.p99,
            ceilingP99 > Self.measurableBaselineP99
        {
            // A baseline whose own p99 is over 1 ms hides 2 ms of added latency in its noise: no verdict.
            writeLine(
                String(
                    format:
                        "added p99 latency ≤ 2 ms at %@ messages/s: not measurable (the splice baseline's own p99 is "
                        + "%.0f µs, over %.0f µs; the relay's %.0f µs)",
                    Self.format(Double(rate)), ceilingP99, Self.measurableBaselineP99, relayP99))
            missed.append("added p99 latency (not measurable)")
        } else if let relayP99 = relay.latency?.p99, let ceilingP99 = ceiling.latency?.p99 {
            let added = relayP99 - ceilingP99
            let latencyMet = added <= 2000
            writeLine(
                String(
                    format: "added p99 latency ≤ 2 ms at %@ messages/s: %@ (%.0f µs − %.0f µs = %.0f µs)",
                    Self.format(Double(rate)), latencyMet ? "met" : "NOT MET", relayP99, ceilingP99, added))
            if !latencyMet { missed.append("added p99 latency") }
        } else {
            writeLine("added p99 latency ≤ 2 ms: NOT MET (no figure)")
            missed.append("added p99 latency")
        }
        return missed
    }

    // MARK: Helpers

    private func printPlan(directory: String) {
        let limit = RelayBench.raiseOpenFileLimit(to: 1_048_576)
        let perBalancer = 4 * tunnels / balancerProcesses
        let perGenerator = 2 * tunnels / generatorProcesses
        let perServer = 2 * tunnels / instances
        writeLine(
            "passkey-bench relay --cluster \(instances): \(Self.format(Double(tunnels))) tunnels held, files per process"
        )
        writeLine(
            "  limited to \(limit): HAProxy 4 per tunnel / \(balancerProcesses) processes ≈ \(perBalancer) each, "
                + "generators 2 / \(generatorProcesses) ≈ \(perGenerator), servers 2 / \(instances) ≈ \(perServer)")
        if max(perBalancer, perGenerator, perServer) > limit - 500 || 2 * tunnels / balancerProcesses > 7_500 {
            writeLine("  (that does not fit: raise --balancer-processes or --generator-processes)")
        }
        if let pinning {
            writeLine(
                "  taskset: generators on CPU \(pinning.generators), HAProxy and relays (or echo-pair servers) on CPU "
                    + "\(pinning.cluster); \(relayThreads) event loop thread per relay, one per generator")
        } else {
            writeLine("  one core: no pinning")
        }
        writeLine("  logs in \(directory)")
    }

    private func pinned(to cpus: String?) -> [String] {
        cpus.map { ["taskset", "-c", $0] } ?? []
    }

    private func clusterScriptPath() throws -> String {
        let executableRoot = URL(fileURLWithPath: Self.ownExecutable).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates =
            clusterScript.map { [$0] }
            ?? [
                FileManager.default.currentDirectoryPath + "/Tools/relay-cluster",
                executableRoot.appendingPathComponent("Tools/relay-cluster").path,
            ]
        guard let found = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw BenchError("Tools/relay-cluster not found (\(candidates.joined(separator: ", "))): --cluster-script")
        }
        return found
    }

    static var ownExecutable: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    }

    /// `total` split over `parts` as evenly as whole numbers allow.
    static func shares(of total: Int, over parts: Int) -> [Int] {
        (0..<parts).map { total / parts + ($0 < total % parts ? 1 : 0) }
    }

    static func pid(in file: String) throws -> pid_t {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        guard let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("no process ID in \(file)")
        }
        return pid
    }

    /// User and system CPU time of the processes, in clock ticks (/proc/PID/stat fields 14 and 15).
    static func cpuTicks(_ pids: [pid_t]) -> Int {
        pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return total }
            // Fields after the command name, which may hold spaces: state is field 3, utime 14, stime 15.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return total + (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func openFiles(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    static func acceptsConnections(port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    static func tail(of file: String) -> String {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(5).joined(separator: " | ")
    }

    static func list(_ values: [some BinaryInteger]) -> String {
        values.map { "\($0)" }.joined(separator: ",")
    }

    static func format(_ value: Double) -> String { AuthenticatorBench.format(value) }
}
