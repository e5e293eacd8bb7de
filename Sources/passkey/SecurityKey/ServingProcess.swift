import Dispatch
import Foundation

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

    /// Calls `handler` on SIGINT and SIGTERM instead of their default action (exit). Cancel the returned sources
    /// when done.
    static func onStopSignal(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }
}
