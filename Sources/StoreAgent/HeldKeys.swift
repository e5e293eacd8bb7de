/// The agent's policy for the keys it holds, one per store (by resolved path), apart from how a key is kept or used:
/// when a key is forgotten, with time passed in by the caller (a monotonic clock's reading), so that it is tested
/// without waiting.
///
/// The rule: a store's key is forgotten when no request has used it for its idle time (`passkey unlock --for`,
/// default ``defaultIdle``), and at the latest ``maximumLifetime`` after it was unlocked, whatever the use; and at
/// once on `lock`. Unlocking again starts both afresh. A key past its time is never used, even if the agent has not
/// yet swept it.
public struct HeldKeys<Key> {
    /// The idle time when `passkey unlock` is not given `--for`: 15 minutes.
    public static var defaultIdle: Duration { .seconds(15 * 60) }
    /// The shortest and longest idle time `--for` may ask for.
    public static var idleRange: ClosedRange<Duration> { .seconds(10)...(.seconds(24 * 3600)) }
    /// The longest a key is held after its unlock, used or not: 24 hours.
    public static var maximumLifetime: Duration { .seconds(24 * 3600) }

    private struct Entry {
        var key: Key
        var idle: Duration
        var lastUse: Duration
        var unlocked: Duration

        func deadline() -> Duration {
            min(lastUse + idle, unlocked + HeldKeys.maximumLifetime)
        }
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    /// The stores whose keys are held (expired ones included until swept).
    public var stores: [String] { entries.keys.sorted() }

    public var isEmpty: Bool { entries.isEmpty }

    /// Holds `key` for `store` from `now`; the idle time is clamped into ``idleRange``. Returns the key it replaces,
    /// for the caller to wipe.
    public mutating func hold(_ key: Key, for store: String, idle: Duration, now: Duration) -> Key? {
        let idle = min(max(idle, Self.idleRange.lowerBound), Self.idleRange.upperBound)
        let previous = entries[store]?.key
        entries[store] = Entry(key: key, idle: idle, lastUse: now, unlocked: now)
        return previous
    }

    /// The key of `store` for a request at `now`, which counts as a use; nil when none is held or its time is over.
    public mutating func use(_ store: String, now: Duration) -> Key? {
        guard var entry = entries[store], now < entry.deadline() else { return nil }
        entry.lastUse = now
        entries[store] = entry
        return entry.key
    }

    /// How long until `store`'s key is forgotten if unused, without using it; nil when none is held.
    public func remaining(_ store: String, now: Duration) -> Duration? {
        guard let entry = entries[store], now < entry.deadline() else { return nil }
        return entry.deadline() - now
    }

    /// How long ago the person unlocked `store` (use does not renew it); nil when no key is held or its time is over.
    public func sinceUnlock(_ store: String, now: Duration) -> Duration? {
        guard let entry = entries[store], now < entry.deadline() else { return nil }
        return max(now - entry.unlocked, .zero)
    }

    /// Forgets `store`'s key (nil: every key) and returns what was forgotten, for the caller to wipe.
    public mutating func forget(_ store: String?) -> [Key] {
        guard let store else {
            defer { entries.removeAll() }
            return entries.values.map(\.key)
        }
        return entries.removeValue(forKey: store).map { [$0.key] } ?? []
    }

    /// Forgets every key whose time is over at `now`, and returns them for the caller to wipe.
    public mutating func sweep(now: Duration) -> [Key] {
        let over = entries.filter { now >= $0.value.deadline() }
        for store in over.keys { entries[store] = nil }
        return over.values.map(\.key)
    }

    /// When the next key's time is over; nil when none is held. The agent wakes then to sweep.
    public var nextDeadline: Duration? { entries.values.map { $0.deadline() }.min() }
}

/// How many times a wrong store passphrase is asked again: three tries in all, each wrong one reported with the
/// tries left, then the command fails.
public struct PassphraseTries: Sendable {
    public static let allowed = 3

    public private(set) var used = 0

    public init() {}

    /// Tries left before this one counts.
    public var left: Int { Self.allowed - used }

    /// Records a wrong passphrase; returns how many tries are left (0: give up).
    public mutating func wrong() -> Int {
        used = min(used + 1, Self.allowed)
        return left
    }
}

/// `passkey unlock --for`'s value: a whole number with `s`, `m` or `h` (`90s`, `15m`, `2h`); a bare number is
/// minutes. Nil for anything else or a duration outside ``HeldKeys/idleRange``.
public func parseIdleDuration(_ text: String) -> Duration? {
    var digits = Substring(text)
    var unit: Int64 = 60
    if let last = text.last, !last.isNumber {
        switch last {
        case "s": unit = 1
        case "m": unit = 60
        case "h": unit = 3600
        default: return nil
        }
        digits = digits.dropLast()
    }
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count <= 6,
        let count = Int64(digits)
    else { return nil }
    let duration = Duration.seconds(count * unit)
    return HeldKeys<Void>.idleRange.contains(duration) ? duration : nil
}
