/// The channel table: allocation for a peer, least-recently-used bookkeeping, and which channel to forget when the
/// table is full.
extension CTAPHIDStateMachine {
    mutating func touch(_ channel: ChannelID) {
        guard channels[channel] != nil else { return }
        useCounter += 1
        channels[channel]?.lastUse = useCounter
    }

    /// Picks an unused identifier and remembers it as `peer`'s, first making room if the table is full.
    /// Returns `nil` when the table is full of channels that cannot be forgotten.
    mutating func allocateChannel(for peer: Peer) -> ChannelID? {
        let limit = max(1, configuration.maximumChannels)
        while channels.count >= limit {
            guard let victim = channelToForget(for: peer) else { return nil }
            channels[victim] = nil
        }
        func isFree(_ candidate: ChannelID) -> Bool {
            candidate != .reserved && candidate != .broadcast && channels[candidate] == nil
        }
        var candidate = ChannelID(rawValue: UInt32(truncatingIfNeeded: channelIDSource.next()))
        var attempts = 1
        while !isFree(candidate) && attempts < 8 {
            candidate = ChannelID(rawValue: UInt32(truncatingIfNeeded: channelIDSource.next()))
            attempts += 1
        }
        // A generator that keeps repeating itself: step to the next free identifier. At most `limit + 2`
        // identifiers are taken or reserved, so this ends within that many steps.
        while !isFree(candidate) {
            candidate = ChannelID(rawValue: candidate.rawValue &+ 1)
        }
        useCounter += 1
        channels[candidate] = AllocatedChannel(owner: peer, lastUse: useCounter)
        return candidate
    }

    /// The channel to forget so that `peer` can have a new one: `peer`'s own least recently used channel, or
    /// if it has none, the least recently used channel of the peer holding the most. Channels in a
    /// transaction or holding the lock are never chosen.
    private func channelToForget(for peer: Peer) -> ChannelID? {
        let protected = [state.channel, lock?.channel]
        let evictable = channels.filter { !protected.contains($0.key) }
        let own = evictable.filter { $0.value.owner == peer }
        if let oldest = own.min(by: { $0.value.lastUse < $1.value.lastUse }) { return oldest.key }
        var held: [Peer: Int] = [:]
        for channel in evictable.values { held[channel.owner, default: 0] += 1 }
        guard let most = held.values.max() else { return nil }
        return evictable.filter { held[$0.value.owner] == most }.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
    }
}
