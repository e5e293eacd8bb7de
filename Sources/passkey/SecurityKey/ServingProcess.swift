import Dispatch
import Foundation
import Synchronization
import TerminalIO
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// What the long-running commands (`passkey serve`, `passkey rp serve`, `passkey listen`, `passkey agent`) share:
/// announcing readiness on standard output and stopping on a signal.
enum ServingProcess {
    /// One line on standard output, written at once: tests and scripts wait for these lines.
    @Sendable static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data("\(line)\n".utf8))
    }

    /// Whether SIGINT (Ctrl-C) stopped the process, as opposed to SIGTERM.
    private static let interrupted = Atomic<Bool>(false)

    /// Calls `handler` on SIGINT and SIGTERM instead of their default action (exit), from the moment this returns:
    /// swift-service-lifecycle's `UnixSignalsSequence` waits until its signal sources are registered. A dispatch
    /// source's registration is asynchronous, and a SIGTERM sent as soon as a `listening on` line appeared used to
    /// fall between `SIG_IGN` and the registration and be lost, so the process kept running (`rp serve` under load;
    /// the relay had the same race, issue 23, attack 8). Cancel the result when done, then call
    /// `endIfInterrupted()`: SIGTERM is a clean stop (status 0), SIGINT ends the command as Ctrl-C ends every command.
    static func onStopSignal(_ handler: @escaping @Sendable () -> Void) async -> StopSignals {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        return StopSignals(
            task: Task {
                for await caught in signals {
                    if caught == .sigint { interrupted.store(true, ordering: .relaxed) }
                    handler()
                }
            })
    }

    /// For a command that serves on its own thread without Swift concurrency (`passkey agent`): calls `handler` on
    /// each of `signals` instead of its default action, from the moment this returns. Each dispatch source's
    /// registration is waited for, as `onStopSignal` waits for its own, for the same reason. Cancel the sources when
    /// done (the signals stay ignored).
    static func trappingStopSignals(
        _ signals: [Int32], _ handler: @escaping @Sendable () -> Void
    ) -> [any DispatchSourceSignal] {
        let registered = DispatchSemaphore(value: 0)
        let sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return source
        }
        for _ in sources { registered.wait() }
        return sources
    }

    /// The signal handling `onStopSignal` set up.
    struct StopSignals: Sendable {
        let task: Task<Void, Never>
        /// Stops handling the signals (they stay ignored).
        func cancel() { task.cancel() }
    }

    /// Once stopped cleanly: after SIGINT, `passkey: interrupted` and status 130 (`Interruption.end()`).
    static func endIfInterrupted() {
        if interrupted.load(ordering: .relaxed) { Interruption.end() }
    }
}
