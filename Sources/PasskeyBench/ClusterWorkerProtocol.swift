/// The lines `passkey-bench relay --cluster` writes to the standard input of each of its load-generator processes
/// (`passkey-bench relay-cluster-worker`), one command at a time; the worker answers each with one `WorkerReply`
/// line on its standard output.
///
///     open 4000                 → opened 4000 0 6.210 000001=1334,000002=1333,000003=1333
///     throughput 13 16 5        → throughput 812345 5.001
///     latency 20 2000 5         → latency 11000 183021 175544 …        (one-way nanoseconds, after the warm-up)
///     close                     → closed 4000
///     quit                      (the worker exits; so it does at the end of its standard input)
enum WorkerCommand: Equatable, Sendable {
    /// Open and pair this many tunnels and hold them until `close`.
    case open(tunnels: Int)
    /// Open tunnels whose clients keep `window` messages in flight, echoed by their authenticators; count the
    /// messages received over `seconds` after a second of warm-up, then close them.
    case throughput(tunnels: Int, window: Int, seconds: Double)
    /// Open tunnels and send `rate` stamped messages a second over them for half a second of warm-up and `seconds`
    /// more; report each message's one-way time after the warm-up, then close them.
    case latency(tunnels: Int, rate: Int, seconds: Double)
    /// Close the tunnels `open` holds.
    case close
    case quit

    var line: String {
        switch self {
        case .open(let tunnels): "open \(tunnels)"
        case .throughput(let tunnels, let window, let seconds): "throughput \(tunnels) \(window) \(seconds)"
        case .latency(let tunnels, let rate, let seconds): "latency \(tunnels) \(rate) \(seconds)"
        case .close: "close"
        case .quit: "quit"
        }
    }

    init(line: some StringProtocol) throws(WorkerProtocolError) {
        let fields = line.split(separator: " ")
        func number<T: LosslessStringConvertible>(_ index: Int) throws(WorkerProtocolError) -> T {
            guard index < fields.count, let value = T(String(fields[index])) else { throw .malformed(String(line)) }
            return value
        }
        switch (fields.first, fields.count) {
        case ("open", 2): self = .open(tunnels: try number(1))
        case ("throughput", 4):
            self = .throughput(tunnels: try number(1), window: try number(2), seconds: try number(3))
        case ("latency", 4): self = .latency(tunnels: try number(1), rate: try number(2), seconds: try number(3))
        case ("close", 1): self = .close
        case ("quit", 1): self = .quit
        default: throw .malformed(String(line))
        }
    }
}

/// A worker's answer to one `WorkerCommand`.
enum WorkerReply: Equatable, Sendable {
    /// Tunnels paired and failed, the seconds it took, paired tunnels per server (relay routing ID or echo-pair
    /// server number) and the first failure's description.
    case opened(paired: Int, failed: Int, seconds: Double, spread: [String: Int], firstError: String?)
    /// Messages received by both sides over `seconds`.
    case throughput(messages: Int, seconds: Double)
    /// Messages sent, and the one-way time of each received after the warm-up, in nanoseconds.
    case latency(sent: Int, samples: [UInt64])
    case closed(tunnels: Int)
    /// The command failed; the worker goes on reading commands.
    case failed(String)

    var line: String {
        switch self {
        case .opened(let paired, let failed, let seconds, let spread, let firstError):
            let servers =
                spread.isEmpty ? "-" : spread.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: ",")
            return "opened \(paired) \(failed) \(seconds) \(servers)"
                + (firstError.map { " " + Self.oneLine($0) } ?? "")
        case .throughput(let messages, let seconds): return "throughput \(messages) \(seconds)"
        case .latency(let sent, let samples):
            return (["latency \(sent)"] + samples.map(String.init)).joined(separator: " ")
        case .closed(let tunnels): return "closed \(tunnels)"
        case .failed(let reason): return "failed " + Self.oneLine(reason)
        }
    }

    init(line: some StringProtocol) throws(WorkerProtocolError) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        func number<T: LosslessStringConvertible>(_ index: Int) throws(WorkerProtocolError) -> T {
            guard index < fields.count, let value = T(String(fields[index])) else { throw .malformed(String(line)) }
            return value
        }
        switch fields.first {
        case "opened" where fields.count >= 5:
            var spread: [String: Int] = [:]
            if fields[4] != "-" {
                for entry in fields[4].split(separator: ",") {
                    let parts = entry.split(separator: "=")
                    guard parts.count == 2, let count = Int(parts[1]) else { throw .malformed(String(line)) }
                    spread[String(parts[0])] = count
                }
            }
            let firstError = fields.count > 5 ? fields[5...].joined(separator: " ") : nil
            self = .opened(
                paired: try number(1), failed: try number(2), seconds: try number(3), spread: spread,
                firstError: firstError)
        case "throughput" where fields.count == 3: self = .throughput(messages: try number(1), seconds: try number(2))
        case "latency" where fields.count >= 2:
            var samples: [UInt64] = []
            samples.reserveCapacity(fields.count - 2)
            for index in 2..<fields.count { samples.append(try number(index)) }
            self = .latency(sent: try number(1), samples: samples)
        case "closed" where fields.count == 2: self = .closed(tunnels: try number(1))
        case "failed": self = .failed(fields.dropFirst().joined(separator: " "))
        default: throw .malformed(String(line.prefix(80)))
        }
    }

    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}

enum WorkerProtocolError: Error, Equatable, CustomStringConvertible {
    /// A line that is no command or reply of this protocol.
    case malformed(String)

    var description: String {
        switch self {
        case .malformed(let line): "malformed worker line: \(line)"
        }
    }
}

/// Percentiles of latency samples merged from several processes, in microseconds.
struct LatencySummary: Equatable, Sendable {
    var count: Int
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var max: Double

    /// nil without samples. The p-th percentile is the sample at index ⌊count × p⌋ of the sorted samples (the
    /// last for p = 1), as `Tools/bench relay` computes it.
    init?(nanoseconds samples: [UInt64]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
        }
        count = sorted.count
        p50 = percentile(0.5)
        p90 = percentile(0.9)
        p99 = percentile(0.99)
        p999 = percentile(0.999)
        max = Double(sorted[sorted.count - 1]) / 1000
    }
}
