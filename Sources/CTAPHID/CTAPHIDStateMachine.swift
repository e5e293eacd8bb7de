/// Identifies one CTAPHID_CBOR request from dispatch to response.
///
/// A channel can be resynchronized (`CTAPHID_INIT`) while its request is still being processed and then send
/// another request; the serial number tells the late answer to the first request apart from the second.
public struct CBORTransactionID: Hashable, Sendable {
    /// The channel the request arrived on, and where its response goes.
    public let channel: ChannelID
    /// A number unique among the requests one state machine has dispatched.
    public let serial: UInt64
}

extension CBORTransactionID: CustomStringConvertible {
    /// `channel#serial`.
    public var description: String { "\(channel)#\(serial)" }
}

/// The CTAPHID protocol of an authenticator (CTAP 2.1 §11.2) as a pure state machine.
///
/// Feed it 64-byte reports from the host with ``receive(report:from:now:)``, the authenticator's answers with
/// ``cborResponse(_:for:now:)``, and the passing of time with ``tick(now:)`` (every 50 ms is plenty). Each call
/// returns the ``Action``s to carry out, in order. The state machine does no I/O and never reads a clock.
///
/// `Peer` is whatever identifies the sender of a report (a socket address, or a test value): replies to a
/// report go to its sender, and the keepalives, timeout error and response of a transaction go to the sender
/// of the packet that started it.
///
/// The rules, briefly:
/// - One transaction at a time: while a message is being reassembled or a CBOR request is being processed on
///   one channel, initialization packets on other channels get `ERR_CHANNEL_BUSY`. `CTAPHID_INIT` on the
///   broadcast channel is always answered. A `CTAPHID_LOCK` reserves the authenticator in the same way.
///   A transaction and a lock belong to the peer that started them as well as to their channel: another peer
///   sending on that channel gets `ERR_CHANNEL_BUSY` too, and cannot abort or resynchronize it.
/// - Continuation packets must count 0, 1, 2, … on the channel being reassembled; any other is
///   `ERR_INVALID_SEQ`. Continuation packets for no transaction, or from a peer other than the one whose message
///   is being reassembled, are ignored.
/// - Each packet of a multi-packet message must follow the previous one within
///   ``Configuration/transactionTimeout``, and the whole message must arrive within
///   ``Configuration/messageTimeout`` of its first packet, or it is dropped with `ERR_MSG_TIMEOUT`. (The gap
///   rule alone would let a host feeding one packet just inside each gap hold the authenticator busy for
///   everyone for a minute.)
/// - While a CBOR request is outstanding a `CTAPHID_KEEPALIVE` goes out every
///   ``Configuration/keepaliveInterval``; `CTAPHID_CANCEL` on its channel becomes ``Action/cancel(_:)``.
/// - This authenticator is CTAP2-only (capability NMSG): `CTAPHID_MSG` is answered with an ISO 7816 status
///   word saying that no CTAP1 instruction is supported.
/// - At most ``Configuration/maximumChannels`` channels are remembered. Each remembers the peer that allocated
///   it. When the table is full, allocating another forgets the least recently used channel of the asking
///   peer; a peer that holds none takes the place of the least recently used channel of the peer holding the
///   most. A channel in a transaction or holding the lock is never forgotten. So one peer allocating over and
///   over only recycles its own channels.
///
/// This file holds the state and the events; the packet and message rules are in `CTAPHIDStateMachine+Packets.swift`
/// and the channel table in `CTAPHIDStateMachine+Channels.swift`.
public struct CTAPHIDStateMachine<Peer: Hashable & Sendable>: Sendable {
    /// The clock the state machine measures time with; callers pass its readings in.
    public typealias Instant = ContinuousClock.Instant

    /// Settings of the state machine.
    public struct Configuration: Hashable, Sendable {
        /// The version reported in the `CTAPHID_INIT` response.
        public var deviceVersion = DeviceVersion(major: 1, minor: 0, build: 0)
        /// How long the next packet of a multi-packet message may take to follow the previous one (default 500 ms).
        public var transactionTimeout: Duration = .milliseconds(500)
        /// How long a whole multi-packet message may take, from its initialization packet to its last
        /// continuation packet, however short the gaps (default 3 s; a 7609-byte message over USB full speed
        /// takes about 130 ms).
        public var messageTimeout: Duration = .seconds(3)
        /// The interval between keepalives while a CBOR request is outstanding (default 100 ms).
        public var keepaliveInterval: Duration = .milliseconds(100)
        /// How many channels are remembered at once (default 64, at least 1).
        public var maximumChannels = 64

        /// The default configuration.
        public init() {}
    }

    /// What the caller must do after an event.
    public enum Action: Hashable, Sendable {
        /// Send this 64-byte report to this peer.
        case send(report: [UInt8], to: Peer)
        /// Give this CTAPHID_CBOR payload (CTAP command byte and CBOR parameters) to the authenticator, and
        /// report its answer with ``CTAPHIDStateMachine/cborResponse(_:for:now:)``.
        case dispatchCBOR(CBORTransactionID, request: [UInt8])
        /// Cancel the authenticator's work on this request. It should still answer (with
        /// CTAP2_ERR_KEEPALIVE_CANCEL 0x2D when the host cancelled); an answer to a request that was aborted by
        /// a resynchronization is dropped.
        case cancel(CBORTransactionID)
        /// Identify the authenticator to the user (`CTAPHID_WINK` arrived on this channel).
        case wink(ChannelID)
    }

    /// The capabilities this state machine implements and reports: WINK, CBOR and NMSG (no CTAP1/U2F).
    public static var capabilities: CTAPHIDCapabilities { [.wink, .cbor, .nmsg] }
    /// The CTAPHID protocol version reported in the `CTAPHID_INIT` response.
    public static var protocolVersion: UInt8 { 2 }

    struct Reassembly {
        var channel: ChannelID
        var command: CTAPHIDCommand
        var peer: Peer
        var expectedLength: Int
        var payload: [UInt8]
        var nextSequence: UInt8
        /// When the next packet is due: the gap timeout from the latest packet, but never past `messageDeadline`.
        var deadline: Instant
        /// When the whole message is due.
        var messageDeadline: Instant
    }

    struct PendingRequest {
        var transaction: CBORTransactionID
        var peer: Peer
        var status: KeepaliveStatus
        var nextKeepalive: Instant
        var cancelRequested: Bool
    }

    enum State {
        case idle
        case reassembling(Reassembly)
        case processing(PendingRequest)

        var channel: ChannelID? { owner?.channel }

        /// The channel of the transaction in progress and the peer that started it.
        var owner: (channel: ChannelID, peer: Peer)? {
            switch self {
            case .idle: nil
            case .reassembling(let reassembly): (reassembly.channel, reassembly.peer)
            case .processing(let pending): (pending.transaction.channel, pending.peer)
            }
        }
    }

    struct Lock {
        var channel: ChannelID
        var peer: Peer
        var expiry: Instant
    }

    /// An allocated channel: who allocated it and when it was last used (a value of `useCounter`).
    struct AllocatedChannel {
        var owner: Peer
        var lastUse: UInt64
    }

    /// The settings this state machine was created with.
    public let configuration: Configuration
    var state = State.idle
    var lock: Lock?
    /// Allocated channels, with their owner and the value of `useCounter` when each was last used.
    var channels: [ChannelID: AllocatedChannel] = [:]
    var useCounter: UInt64 = 0
    var transactionCounter: UInt64 = 0
    var channelIDSource: any RandomNumberGenerator & Sendable

    /// Creates a state machine with no channels allocated.
    ///
    /// - Parameters:
    ///   - configuration: Timeouts, limits and the reported device version.
    ///   - channelIDSource: Where new channel identifiers come from (32 random bits of each `next()`).
    ///     Identifiers that are reserved or in use are skipped, so any generator works, even a constant one.
    public init(
        configuration: Configuration = Configuration(),
        channelIDSource: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.configuration = configuration
        self.channelIDSource = channelIDSource
    }

    /// The channels currently allocated, in no particular order.
    public var allocatedChannels: Set<ChannelID> { Set(channels.keys) }

    /// Whether a message is being reassembled or a CBOR request is outstanding.
    public var isBusy: Bool { state.channel != nil }

    // MARK: Events

    /// A report arrived from the host.
    ///
    /// - Throws: ``CTAPHIDFramingError/wrongReportSize(_:)`` if the report is not 64 bytes; nothing changes then.
    public mutating func receive(
        report: [UInt8],
        from peer: Peer,
        now: Instant
    ) throws(CTAPHIDFramingError) -> [Action] {
        let packet = try CTAPHIDPacket(report: report)
        var actions: [Action] = []
        expire(now: now, into: &actions)
        switch packet.kind {
        case .initialization(let command, let length):
            initializationPacket(
                channel: packet.channel, command: command, length: Int(length), data: packet.data, peer: peer,
                now: now, into: &actions)
        case .continuation(let sequence):
            continuationPacket(
                channel: packet.channel, sequence: sequence, data: packet.data, peer: peer, now: now, into: &actions)
        }
        return actions
    }

    /// The authenticator answered a request (status byte and CBOR).
    ///
    /// The answer is split into reports for the peer that sent the request. An answer to a request that is no
    /// longer outstanding (its channel was resynchronized) is dropped. An empty answer, or one longer than
    /// 7609 bytes, cannot be framed and becomes `ERR_OTHER`.
    ///
    /// - Parameter now: When the answer arrived. Like every event, this one carries the time, although no rule
    ///   depends on it today.
    public mutating func cborResponse(
        _ response: [UInt8],
        for transaction: CBORTransactionID,
        now: Instant
    ) -> [Action] {
        guard case .processing(let pending) = state, pending.transaction == transaction else { return [] }
        state = .idle
        touch(transaction.channel)
        guard !response.isEmpty, response.count <= CTAPHIDPacket.maximumMessageLength else {
            return error(.other, channel: transaction.channel, to: pending.peer)
        }
        return send(
            CTAPHIDMessage(uncheckedChannel: transaction.channel, command: .cbor, payload: response),
            to: pending.peer)
    }

    /// The last program that had the device open closed it (uhid's `UHID_CLOSE`): a request still being processed is
    /// cancelled, as a CTAPHID_CANCEL from its sender would, so that nothing waits on for a host that is gone (a
    /// phone session behind the key, a prompt). Nothing is sent.
    public mutating func hostClosed(now: Instant) -> [Action] {
        guard case .processing(var pending) = state, !pending.cancelRequested else { return [] }
        pending.cancelRequested = true
        state = .processing(pending)
        return [.cancel(pending.transaction)]
    }

    /// The authenticator changed what it is waiting for while processing a request.
    ///
    /// A change of status is sent to the host at once in a keepalive; the same status again changes nothing.
    public mutating func keepaliveStatus(
        _ status: KeepaliveStatus,
        for transaction: CBORTransactionID,
        now: Instant
    ) -> [Action] {
        guard case .processing(var pending) = state, pending.transaction == transaction, pending.status != status
        else { return [] }
        pending.status = status
        pending.nextKeepalive = now.advanced(by: configuration.keepaliveInterval)
        state = .processing(pending)
        return keepalive(pending)
    }

    /// Time passed: sends keepalives that are due, times out slow messages and releases an expired lock.
    public mutating func tick(now: Instant) -> [Action] {
        var actions: [Action] = []
        expire(now: now, into: &actions)
        if case .processing(var pending) = state, now >= pending.nextKeepalive {
            pending.nextKeepalive = now.advanced(by: configuration.keepaliveInterval)
            state = .processing(pending)
            actions += keepalive(pending)
        }
        return actions
    }

    // MARK: Time and replies

    /// Drops a message that took too long (telling its sender) and a lock that ran out.
    private mutating func expire(now: Instant, into actions: inout [Action]) {
        if let lock, now >= lock.expiry {
            self.lock = nil
        }
        if case .reassembling(let reassembly) = state, now >= reassembly.deadline {
            state = .idle
            actions += error(.messageTimeout, channel: reassembly.channel, to: reassembly.peer)
        }
    }

    func initResponse(
        channel: ChannelID,
        nonce: ArraySlice<UInt8>,
        allocated: ChannelID,
        to peer: Peer
    ) -> [Action] {
        let version = configuration.deviceVersion
        let payload =
            Array(nonce) + allocated.bytes + [
                Self.protocolVersion, version.major, version.minor, version.build, Self.capabilities.rawValue,
            ]
        return send(CTAPHIDMessage(uncheckedChannel: channel, command: .initialize, payload: payload), to: peer)
    }

    private func keepalive(_ pending: PendingRequest) -> [Action] {
        let message = CTAPHIDMessage(
            uncheckedChannel: pending.transaction.channel, command: .keepalive, payload: [pending.status.rawValue])
        return send(message, to: pending.peer)
    }

    func error(_ code: CTAPHIDErrorCode, channel: ChannelID, to peer: Peer) -> [Action] {
        send(CTAPHIDMessage(uncheckedChannel: channel, command: .error, payload: [code.rawValue]), to: peer)
    }

    func send(_ message: CTAPHIDMessage, to peer: Peer) -> [Action] {
        message.reports.map { .send(report: $0, to: peer) }
    }
}
