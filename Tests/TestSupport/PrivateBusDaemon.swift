import Foundation

/// A private D-Bus daemon for one test (`dbus-daemon --session`, started by the test, stopped when the value goes):
/// tests connect to `address` instead of the person's session bus or the system bus.
public final class PrivateBusDaemon: Sendable {
    public let daemon: ChildProcess
    /// The daemon's address (`unix:path=…` or `unix:abstract=…`).
    public let address: String

    /// Starts the daemon and waits up to 20 s for it to print its address; throws when it does not.
    public init() async throws {
        daemon = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--nosyslog", "--print-address=1"])
        guard let line = await daemon.stdoutLine(timeout: .seconds(20)) else {
            daemon.stop()
            throw PrivateBusDaemonError(reason: "dbus-daemon gave no address: \(daemon.errors)")
        }
        address = line.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit { daemon.stop() }
}

/// Why the private bus did not start.
public struct PrivateBusDaemonError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
