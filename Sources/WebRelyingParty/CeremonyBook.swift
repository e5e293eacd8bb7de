/// How long challenges live and how many ceremonies are kept.
public struct CeremonyLimits: Hashable, Sendable {
    /// How long a challenge may be answered (default 5 minutes).
    public var lifetime = Duration.seconds(300)
    /// Ceremonies kept at once (default 256).
    public var maximumPending = 256
    /// Finished, expired or dropped challenges remembered for a clearer refusal (default 1,024).
    public var maximumRetired = 1024

    public init() {}
}

/// The ceremonies a relying party has started and not yet finished, found by their challenge.
///
/// A challenge is single-use: ``take(_:now:)`` removes it whatever the verification that follows decides.
/// It expires after ``CeremonyLimits/lifetime``. At most ``CeremonyLimits/maximumPending`` are kept: issuing one more drops the
/// oldest, so a client that only ever asks for options cannot grow memory without limit. Challenges that were
/// taken, expired or dropped are remembered (at most ``CeremonyLimits/maximumRetired``, oldest forgotten first) so that
/// a late or repeated verification is told which of these happened. Time is passed in; nothing here reads a clock.
///
/// Why the challenge and not a ceremony ID the page echoes back: the challenge is already in the signed
/// clientDataJSON of every response, so the response alone names its ceremony, `toJSON()` output can be posted
/// as it is, and a page cannot pair a response with another ceremony's options.
public struct CeremonyBook<Ceremony: Sendable>: Sendable {
    /// Why ``take(_:now:)`` found no ceremony.
    public enum Refusal: Error, Hashable, Sendable {
        /// Never issued, or retired so long ago that it was forgotten.
        case unknown
        /// Issued, and its lifetime is over.
        case expired
        /// Dropped to make room for newer ceremonies.
        case evicted
        /// Already taken by an earlier verification.
        case replayed
    }

    private struct Entry: Sendable {
        var ceremony: Ceremony
        var expires: ContinuousClock.Instant
    }

    public let limits: CeremonyLimits
    private var pending: [[UInt8]: Entry] = [:]
    /// Pending challenges in the order they were issued (so, with one lifetime, in the order they expire).
    private var order: [[UInt8]] = []
    private var retired: [[UInt8]: Refusal] = [:]
    private var retiredOrder: [[UInt8]] = []

    public init(limits: CeremonyLimits = CeremonyLimits()) {
        self.limits = limits
    }

    /// Ceremonies waiting for their response.
    public var pendingCount: Int { pending.count }

    /// Starts a ceremony under `challenge`, which must be fresh random bytes.
    public mutating func issue(_ ceremony: Ceremony, challenge: [UInt8], now: ContinuousClock.Instant) {
        expire(now: now)
        while pending.count >= max(limits.maximumPending, 1), let oldest = order.first {
            order.removeFirst()
            pending[oldest] = nil
            retire(oldest, as: .evicted)
        }
        if pending[challenge] != nil { order.removeAll { $0 == challenge } }
        pending[challenge] = Entry(ceremony: ceremony, expires: now + limits.lifetime)
        order.append(challenge)
    }

    /// Ends the ceremony of `challenge` and returns it, or says why there is none. Either way the challenge
    /// cannot be used again.
    public mutating func take(_ challenge: [UInt8], now: ContinuousClock.Instant) -> Result<Ceremony, Refusal> {
        expire(now: now)
        guard let entry = pending.removeValue(forKey: challenge) else {
            return .failure(retired[challenge] ?? .unknown)
        }
        order.removeAll { $0 == challenge }
        retire(challenge, as: .replayed)
        return .success(entry.ceremony)
    }

    /// Retires every challenge whose lifetime is over. A challenge is expired from `expires` on.
    private mutating func expire(now: ContinuousClock.Instant) {
        while let oldest = order.first, let entry = pending[oldest], entry.expires <= now {
            order.removeFirst()
            pending[oldest] = nil
            retire(oldest, as: .expired)
        }
    }

    private mutating func retire(_ challenge: [UInt8], as refusal: Refusal) {
        if retired.updateValue(refusal, forKey: challenge) == nil {
            retiredOrder.append(challenge)
        }
        while retiredOrder.count > limits.maximumRetired {
            retired[retiredOrder.removeFirst()] = nil
        }
    }
}
