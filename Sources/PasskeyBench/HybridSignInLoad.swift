import Basics
import Dispatch
import Foundation
import Hybrid
import Synchronization

/// A load run of `passkey-bench hybrid --count N | --duration S`: `concurrency` computer-and-phone pairs sign in
/// back to back through `relay` until `count` sign-ins have started, `duration` has passed, or SIGINT or SIGTERM
/// came. Nothing stops at the first failure: each is counted with its reason and the routing ID the phone got, so a
/// run against a cluster shows which instance failed what.
struct HybridSignInLoad: Sendable {
    var relay: TunnelServerBaseURL
    var count: Int?
    var duration: Duration?
    var concurrency: Int
    var timeout: Duration

    /// One sign-in's outcome.
    struct Sample: Sendable {
        /// Its duration, when it succeeded.
        var latency: Duration?
        /// The routing ID the relay handed the phone on `/cable/new`; nil when the phone never got one.
        var routingID: RoutingID?
        /// Why it failed.
        var failure: String?
    }

    func run() async throws -> Result {
        let tickets = Tickets(count: count)
        let signals = Self.stopOnSignal(tickets)
        defer { signals.forEach { $0.cancel() } }
        let workerCount = min(concurrency, count ?? concurrency)
        // Each worker registers its passkey through the relay first; a failure there ends the run.
        let timeout = timeout
        let relay = relay
        let workers = try await withThrowingTaskGroup(of: HybridSignInBench.Worker.self) { group in
            for _ in 0..<workerCount {
                group.addTask { try await HybridSignInBench.Worker.make(relay: relay, timeout: timeout) }
            }
            var workers: [HybridSignInBench.Worker] = []
            for try await worker in group { workers.append(worker) }
            return workers
        }
        let started = ContinuousClock.now
        let deadline = duration.map { started + $0 }
        let samples = await withTaskGroup(of: [Sample].self) { group in
            for worker in workers {
                group.addTask {
                    var mine: [Sample] = []
                    while true {
                        if let deadline, ContinuousClock.now >= deadline { break }
                        guard tickets.take() else { break }
                        do {
                            let latency = try await worker.signIn()
                            mine.append(Sample(latency: latency, routingID: worker.recorder.take().routingID))
                        } catch {
                            let phone = worker.recorder.take()
                            let reason = String(describing: error) + (phone.failure.map { "; the phone: \($0)" } ?? "")
                            mine.append(Sample(routingID: phone.routingID, failure: reason))
                        }
                    }
                    return mine
                }
            }
            var all: [Sample] = []
            for await mine in group { all += mine }
            return all
        }
        return Result(
            relay: relay.string, concurrency: workerCount, samples: samples,
            elapsed: ContinuousClock.now - started)
    }

    /// Hands out at most `count` sign-ins to the workers (any number without one), none once stopped.
    final class Tickets: Sendable {
        private let count: Int?
        private let issued = Atomic<Int>(0)
        private let stopped = Atomic<Bool>(false)

        init(count: Int?) { self.count = count }

        /// Whether one more sign-in may start.
        func take() -> Bool {
            guard !stopped.load(ordering: .relaxed) else { return false }
            guard let count else { return true }
            return issued.wrappingAdd(1, ordering: .relaxed).oldValue < count
        }

        /// No sign-in starts from now on; those in flight finish.
        func stop() { stopped.store(true, ordering: .relaxed) }
    }

    /// On SIGINT or SIGTERM, `tickets` stops: the run ends once the sign-ins in flight have, and reports. Cancel the
    /// returned sources when done.
    private static func stopOnSignal(_ tickets: Tickets) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { tickets.stop() }
            source.resume()
            return source
        }
    }

    /// What a load run found; `--json` prints it as it is encoded.
    struct Result: Encodable {
        struct Tally: Encodable {
            var succeeded = 0
            var failed = 0
        }

        struct Latency: Encodable {
            var p50: Double
            var p90: Double
            var p99: Double
            var max: Double
        }

        /// The relay's base URL.
        var relay: String
        /// Sign-ins in flight at once (workers).
        var concurrency: Int
        var succeeded: Int
        var failed: Int
        /// From the first sign-in's start to the last one's end.
        var seconds: Double
        var signInsPerSecond: Double
        /// Of the sign-ins that succeeded, in milliseconds; nil when none did.
        var latencyMilliseconds: Latency?
        /// Sign-ins by the routing ID the relay handed the phone (upper-case hex); "none" for failures before the
        /// phone got one.
        var routingIDs: [String: Tally]
        /// Failures by reason: the computer's, and the phone's when it failed too.
        var failures: [String: Int]

        init(relay: String, concurrency: Int, samples: [Sample], elapsed: Duration) {
            self.relay = relay
            self.concurrency = concurrency
            let latencies = samples.compactMap(\.latency).sorted()
            succeeded = latencies.count
            failed = samples.count - succeeded
            seconds = elapsed.inSeconds
            signInsPerSecond = seconds > 0 ? Double(succeeded) / seconds : 0
            if let last = latencies.last {
                func at(_ fraction: Double) -> Double {
                    latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))].inSeconds * 1000
                }
                latencyMilliseconds = Latency(p50: at(0.5), p90: at(0.9), p99: at(0.99), max: last.inSeconds * 1000)
            }
            routingIDs = [:]
            failures = [:]
            for sample in samples {
                let key = sample.routingID?.hex ?? "none"
                if let failure = sample.failure {
                    routingIDs[key, default: Tally()].failed += 1
                    failures[failure, default: 0] += 1
                } else {
                    routingIDs[key, default: Tally()].succeeded += 1
                }
            }
        }

        func jsonText() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }

        func printSummary() {
            print(
                "  \(succeeded) sign-ins succeeded, \(failed) failed, in "
                    + String(format: "%.1f s (%.1f sign-ins/s), %d at a time", seconds, signInsPerSecond, concurrency))
            if let latency = latencyMilliseconds {
                print(
                    String(
                        format: "  latency p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms", latency.p50,
                        latency.p90, latency.p99, latency.max))
            }
            for (routingID, tally) in routingIDs.sorted(by: { $0.key < $1.key }) {
                print("  routing ID \(routingID): \(tally.succeeded) succeeded, \(tally.failed) failed")
            }
            for (reason, count) in failures.sorted(by: { $0.value > $1.value }) {
                print("  failed \(count)×: \(reason)")
            }
        }
    }
}
