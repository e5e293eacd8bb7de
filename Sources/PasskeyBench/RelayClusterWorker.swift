import ArgumentParser
import Basics
import Foundation
import NIOCore
import NIOPosix
import Synchronization

extension TunnelKind: ExpressibleByArgument {}

/// One load-generator process of `passkey-bench relay --cluster` (hidden): reads `WorkerCommand` lines on standard
/// input and answers each with a `WorkerReply` line; exits at `quit` or the end of its input, so it never outlives
/// the bench. One event loop thread: the bench starts several of these, each with its own 20,000 open files.
struct RelayClusterWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-cluster-worker",
        abstract: "A load generator that passkey-bench relay --cluster drives over its standard input.",
        shouldDisplay: false
    )

    @Option(help: "Port of the balancer on 127.0.0.1.") var port: Int
    @Option(help: "relay (WebSocket tunnels through passkey-relay) or echo-pair (the TCP ceiling).")
    var kind = TunnelKind.relay
    @Option(help: "Tunnels being opened at once.") var lanes = 16

    func run() async throws {
        _ = RelayBench.raiseOpenFileLimit(to: 1_048_576)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var generator = LoadGenerator(group: group, port: port)
        generator.kind = kind
        generator.lanes = lanes
        var held: [LoadGenerator.Pair] = []
        while let line = await readStandardInputLine() {
            let command: WorkerCommand
            do {
                command = try WorkerCommand(line: line)
            } catch {
                writeLine(WorkerReply.failed("\(error)").line)
                continue
            }
            if command == .quit { break }
            writeLine(await perform(command, generator: generator, held: &held).line)
        }
        // Exiting closes every socket; a graceful close of thousands of tunnels would only take longer.
        Foundation.exit(0)
    }

    private func perform(_ command: WorkerCommand, generator: LoadGenerator, held: inout [LoadGenerator.Pair]) async
        -> WorkerReply
    {
        switch command {
        case .open(let tunnels):
            let start = ContinuousClock.now
            let opening = await generator.openTunnelsCountingFailures(tunnels, role: .idle)
            held += opening.pairs
            return .opened(
                paired: opening.pairs.count, failed: opening.failures, seconds: (ContinuousClock.now - start).inSeconds,
                spread: opening.spread, firstError: opening.firstError)

        case .throughput(let tunnels, let window, let seconds):
            let counter = MessageCounter()
            let opening = await generator.openTunnelsCountingFailures(tunnels, role: .echo(counter))
            defer { Self.close(opening.pairs) }
            if let error = opening.firstError { return .failed("\(opening.failures) tunnels failed: \(error)") }
            for pair in opening.pairs {
                pair.client.eventLoop.execute { LoadGenerator.sendFrames(window, on: pair.client) }
            }
            do {
                try await Task.sleep(for: .seconds(1))  // warm-up
                let counted = counter.value.load(ordering: .relaxed)
                let start = ContinuousClock.now
                try await Task.sleep(for: .seconds(seconds))
                let elapsed = ContinuousClock.now - start
                return .throughput(
                    messages: counter.value.load(ordering: .relaxed) - counted, seconds: elapsed.inSeconds)
            } catch {
                return .failed("\(error)")
            }

        case .latency(let tunnels, let rate, let seconds):
            let samples = LatencySamples()
            let opening = await generator.openTunnelsCountingFailures(tunnels, role: .latency(samples))
            defer { Self.close(opening.pairs) }
            if let error = opening.firstError { return .failed("\(opening.failures) tunnels failed: \(error)") }
            let pacer = Pacer(tunnels: opening.pairs.map(\.client), rate: rate)
            do {
                try await pacer.run(for: .seconds(seconds + 0.5), on: generator.group.next())
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                return .failed("\(error)")
            }
            // The first half second warms up.
            return .latency(sent: pacer.sentCount, samples: Array(samples.drain().dropFirst(rate / 2)))

        case .close:
            let count = held.count
            Self.close(held)
            held = []
            return .closed(tunnels: count)

        case .quit:
            return .closed(tunnels: 0)
        }
    }

    private static func close(_ pairs: [LoadGenerator.Pair]) {
        for pair in pairs {
            pair.client.close(promise: nil)
            pair.authenticator.close(promise: nil)
        }
    }
}
