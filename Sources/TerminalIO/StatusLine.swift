import Basics
import Foundation

/// Progress lines on standard error, with the time since the command started.
public struct StatusLine: Sendable {
    public let enabled: Bool
    public let start = ContinuousClock.now

    public init(enabled: Bool) { self.enabled = enabled }

    /// Writes `text` stamped with the time, unless disabled or the command is quiet (`OutputLevel`).
    public func say(_ text: String) {
        guard enabled, OutputLevel.current.showsProgress else { return }
        Terminal.shared.write(Self.line(text, since: start))
    }

    /// `text` stamped with the time since `start`, as every status line is: `[ 0.123 s] text`.
    public static func line(_ text: String, since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        return String(format: "[%6.3f s] ", Double(elapsed.inMilliseconds) / 1000) + text + "\n"
    }
}
