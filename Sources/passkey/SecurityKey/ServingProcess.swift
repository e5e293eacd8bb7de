import Dispatch
import Foundation
import Synchronization
import TerminalIO

#if canImport(Glibc)
    import Glibc
#endif

/// What the long-running commands (`passkey serve`, `passkey rp serve`) share: announcing readiness on standard
/// output and stopping on a signal.
enum ServingProcess {
    /// One line on standard output, written at once: tests and scripts wait for these lines.
    @Sendable static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data("\(line)\n".utf8))
    }

    /// Whether SIGINT (Ctrl-C) stopped the process, as opposed to SIGTERM.
    private static let interrupted = Atomic<Bool>(false)

    /// Calls `handler` on SIGINT and SIGTERM instead of their default action (exit). Cancel the returned sources
    /// when done, then call `endIfInterrupted()`: SIGTERM is a clean stop (status 0), SIGINT ends the command as
    /// Ctrl-C ends every command.
    static func onStopSignal(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if number == SIGINT { interrupted.store(true, ordering: .relaxed) }
                handler()
            }
            source.resume()
            return source
        }
    }

    /// Once stopped cleanly: after SIGINT, `passkey: interrupted` and status 130 (`Interruption.end()`).
    static func endIfInterrupted() {
        if interrupted.load(ordering: .relaxed) { Interruption.end() }
    }
}
