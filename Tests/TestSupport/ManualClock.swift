import Synchronization

/// A clock that moves only when a test says so, for code under test that takes a `now` closure.
public final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    public init() {}

    public var now: ContinuousClock.Instant { instant.withLock { $0 } }

    public func advance(by duration: Duration) { instant.withLock { $0 += duration } }
}
