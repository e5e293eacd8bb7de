/// What a device said about itself in its `CTAPHID_INIT` response (CTAP 2.1 §11.2.9.1.3).
public struct CTAPHIDDeviceInfo: Hashable, Sendable {
    /// The channel the device assigned to this host.
    public var channel: ChannelID
    /// The CTAPHID protocol version (2 for CTAP 2).
    public var protocolVersion: UInt8
    /// The vendor-defined device version.
    public var deviceVersion: DeviceVersion
    /// What the device implements: WINK, CBOR, and NMSG when it has no CTAP1/U2F.
    public var capabilities: CTAPHIDCapabilities

    /// Creates a description of a device.
    public init(
        channel: ChannelID, protocolVersion: UInt8, deviceVersion: DeviceVersion, capabilities: CTAPHIDCapabilities
    ) {
        self.channel = channel
        self.protocolVersion = protocolVersion
        self.deviceVersion = deviceVersion
        self.capabilities = capabilities
    }
}

/// The host's side of CTAPHID (CTAP 2.1 §11.2) as a pure state machine: a platform talking to a security key.
///
/// Ask for an exchange with ``send(command:payload:nonce:now:deadline:)``, feed every 64-byte report the device
/// sends with ``receive(report:now:)``, and the passing of time with ``tick(now:)`` (``nextDeadline`` says when
/// one is due); ``cancel(now:)`` aborts. Each call returns the ``Action``s to carry out, in order. The state machine
/// does no I/O, reads no clock and makes no random numbers: the nonce of each channel allocation is a parameter.
///
/// The rules, briefly:
/// - One exchange at a time. Without a channel, sending first allocates one: `CTAPHID_INIT` with an 8-byte nonce
///   on the broadcast channel, then the message once the response carrying that nonce arrives. INIT responses with
///   other nonces (other programs share a hidraw node and see every report) are ignored, as is anything else on
///   the broadcast channel and every packet on other channels.
/// - A message goes out as one initialization packet and continuation packets 0, 1, 2, …, at most 7609 bytes.
/// - The response must be the command sent. Continuation packets must count up from 0
///   (``CTAPHIDHostError/outOfSequence(expected:received:)`` otherwise); an initialization packet in the middle of a
///   response is ``CTAPHIDHostError/messageInterrupted(by:)``. Continuation packets before any initialization packet
///   are ignored.
/// - `CTAPHID_KEEPALIVE` becomes ``Action/keepalive(_:)`` (statuses other than processing and user presence needed
///   are ignored); `CTAPHID_ERROR` ends the exchange with ``CTAPHIDHostError/deviceError(_:)``.
/// - Every exchange has a deadline. A CBOR request that runs out of time is cancelled on the device
///   (`CTAPHID_CANCEL`) as it fails. ``cancel(now:)`` sends `CTAPHID_CANCEL` for a CBOR request and keeps waiting,
///   at most ``Configuration/cancelGracePeriod``, for the device's answer (CTAP2_ERR_KEEPALIVE_CANCEL, delivered as
///   the response); other exchanges and allocations fail at once with ``CTAPHIDHostError/cancelled``.
/// - After a failure the channel is forgotten, so the next exchange allocates a fresh one and cannot mistake a late
///   answer for its own; only a `CTAPHID_ERROR` other than ERR_INVALID_CHANNEL keeps it, since the device itself
///   ended the exchange then.
public struct CTAPHIDHostStateMachine: Sendable {
    /// The clock the state machine measures time with; callers pass its readings in.
    public typealias Instant = ContinuousClock.Instant

    /// Settings of the state machine.
    public struct Configuration: Hashable, Sendable {
        /// How long to wait for the device's answer after cancelling a CBOR request (default 1 s).
        public var cancelGracePeriod: Duration = .seconds(1)

        /// The default configuration.
        public init() {}
    }

    /// What the caller must do after an event.
    public enum Action: Hashable, Sendable {
        /// Write this 64-byte report to the device.
        case send(report: [UInt8])
        /// The device assigned a channel and described itself.
        case channelAllocated(CTAPHIDDeviceInfo)
        /// The device is still working on the request; with ``KeepaliveStatus/userPresenceNeeded`` it waits for a
        /// touch, which the user interface should ask for.
        case keepalive(KeepaliveStatus)
        /// The exchange ended with this response (for CBOR: the CTAP status byte and CBOR).
        case response(command: CTAPHIDCommand, payload: [UInt8])
        /// The exchange (or the allocation) ended without a response.
        case failed(CTAPHIDHostError)
    }

    /// A message waiting for its channel, or on its way.
    struct Request {
        var command: CTAPHIDCommand
        var payload: [UInt8]
        var deadline: Instant
    }

    struct Allocation {
        var nonce: [UInt8]
        var deadline: Instant
        /// The message to send once the channel is there; `nil` for an allocation on its own.
        var request: Request?
    }

    struct Reassembly {
        var expectedLength: Int
        var payload: [UInt8]
        var nextSequence: UInt8
    }

    struct Exchange {
        var channel: ChannelID
        var command: CTAPHIDCommand
        var deadline: Instant
        var cancelled = false
        var reassembly: Reassembly?
    }

    enum State {
        case idle
        case allocating(Allocation)
        case exchanging(Exchange)
    }

    /// The settings this state machine was created with.
    public let configuration: Configuration
    private var state = State.idle
    /// The channel the device assigned, while it is trusted.
    public private(set) var channel: ChannelID?

    /// Creates a state machine with no channel.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Whether an allocation or an exchange is in progress.
    public var isBusy: Bool {
        if case .idle = state { return false }
        return true
    }

    /// When ``tick(now:)`` has something to do: the deadline of the allocation or exchange in progress.
    public var nextDeadline: Instant? {
        switch state {
        case .idle: nil
        case .allocating(let allocation): allocation.deadline
        case .exchanging(let exchange): exchange.deadline
        }
    }

    // MARK: Events

    /// Allocates a new channel (forgetting the current one), to learn the device's capabilities before sending.
    ///
    /// - Parameters:
    ///   - nonce: Eight fresh random bytes, as a number; the response must carry them.
    ///   - deadline: When to give up with ``CTAPHIDHostError/channelAllocationTimedOut``.
    /// - Throws: ``CTAPHIDHostError/busy``; nothing changes then.
    public mutating func allocateChannel(nonce: UInt64, now: Instant, deadline: Instant) throws(CTAPHIDHostError)
        -> [Action]
    {
        guard !isBusy else { throw .busy }
        channel = nil
        return allocate(nonce: nonce, deadline: deadline, then: nil)
    }

    /// Sends a message and waits for its response, allocating a channel first if there is none.
    ///
    /// - Parameters:
    ///   - command: What to send: PING, WINK, CBOR, MSG, LOCK or a vendor command.
    ///   - payload: At most 7609 bytes.
    ///   - nonce: The nonce of the channel allocation, if one is needed (eight fresh random bytes, as a number).
    ///   - deadline: When to give up, allocation included.
    /// - Throws: ``CTAPHIDHostError/busy``, ``CTAPHIDHostError/messageTooLong(_:)`` or
    ///   ``CTAPHIDHostError/commandNotSendable(_:)``; nothing changes then.
    public mutating func send(
        command: CTAPHIDCommand, payload: [UInt8], nonce: UInt64, now: Instant, deadline: Instant
    ) throws(CTAPHIDHostError) -> [Action] {
        guard !isBusy else { throw .busy }
        switch command {
        case .initialize, .cancel, .keepalive, .error: throw .commandNotSendable(command)
        default: break
        }
        guard payload.count <= CTAPHIDPacket.maximumMessageLength else { throw .messageTooLong(payload.count) }
        let request = Request(command: command, payload: payload, deadline: deadline)
        guard let channel else { return allocate(nonce: nonce, deadline: deadline, then: request) }
        return start(request, on: channel)
    }

    /// A report arrived from the device.
    ///
    /// - Throws: ``CTAPHIDFramingError/wrongReportSize(_:)`` if the report is not 64 bytes; nothing changes then.
    public mutating func receive(report: [UInt8], now: Instant) throws(CTAPHIDFramingError) -> [Action] {
        let packet = try CTAPHIDPacket(report: report)
        var actions = expire(now: now)
        switch state {
        case .idle:
            break
        case .allocating(let allocation):
            actions += allocationPacket(packet, allocation)
        case .exchanging(let exchange):
            guard packet.channel == exchange.channel else { break }
            actions += exchangePacket(packet)
        }
        return actions
    }

    /// Time passed: fails an allocation or exchange whose deadline has come.
    public mutating func tick(now: Instant) -> [Action] {
        expire(now: now)
    }

    /// Aborts what is in progress. A CBOR request is cancelled on the device (`CTAPHID_CANCEL`), whose answer is
    /// still awaited for ``Configuration/cancelGracePeriod``; anything else fails at once. Nothing in progress, or a
    /// cancellation already sent: no actions.
    public mutating func cancel(now: Instant) -> [Action] {
        switch state {
        case .idle:
            return []
        case .allocating:
            return fail(.cancelled)
        case .exchanging(var exchange):
            guard exchange.command == .cbor else { return fail(.cancelled) }
            guard !exchange.cancelled else { return [] }
            exchange.cancelled = true
            exchange.deadline = min(exchange.deadline, now.advanced(by: configuration.cancelGracePeriod))
            state = .exchanging(exchange)
            return [cancelReport(exchange.channel)]
        }
    }

    // MARK: Packets

    private mutating func allocationPacket(_ packet: CTAPHIDPacket, _ allocation: Allocation) -> [Action] {
        guard packet.channel == .broadcast, case .initialization(.initialize, let declared) = packet.kind,
            Array(packet.data.prefix(8)) == allocation.nonce
        else { return [] }
        let length = Int(declared)
        guard length >= 17 else { return fail(.invalidResponseLength(command: .initialize, length: length)) }
        let data = packet.data
        let assigned = ChannelID(bigEndianBytes: data[8..<12])
        guard assigned != .broadcast, assigned != .reserved else { return fail(.invalidChannelAssigned(assigned)) }
        let info = CTAPHIDDeviceInfo(
            channel: assigned, protocolVersion: data[12],
            deviceVersion: DeviceVersion(major: data[13], minor: data[14], build: data[15]),
            capabilities: CTAPHIDCapabilities(rawValue: data[16]))
        channel = assigned
        state = .idle
        var actions: [Action] = [.channelAllocated(info)]
        if let request = allocation.request { actions += start(request, on: assigned) }
        return actions
    }

    private mutating func exchangePacket(_ packet: CTAPHIDPacket) -> [Action] {
        guard case .exchanging(var exchange) = state else { return [] }
        switch packet.kind {
        case .initialization(let command, let declared):
            let length = Int(declared)
            guard exchange.reassembly == nil else { return fail(.messageInterrupted(by: command)) }
            switch command {
            case .keepalive:
                guard length >= 1, let status = KeepaliveStatus(rawValue: packet.data[0]) else { return [] }
                return [.keepalive(status)]
            case .error:
                guard length >= 1 else { return fail(.invalidResponseLength(command: .error, length: length)) }
                let code = CTAPHIDErrorCode(rawValue: packet.data[0])
                return fail(.deviceError(code), keepChannel: code != .invalidChannel)
            case exchange.command:
                guard length <= CTAPHIDPacket.maximumMessageLength else {
                    return fail(.invalidResponseLength(command: command, length: length))
                }
                if length <= CTAPHIDPacket.initializationDataSize {
                    return complete(command, payload: Array(packet.data.prefix(length)))
                }
                var payload = packet.data
                payload.reserveCapacity(length)
                exchange.reassembly = Reassembly(expectedLength: length, payload: payload, nextSequence: 0)
                state = .exchanging(exchange)
                return []
            default:
                return fail(.unexpectedCommand(command))
            }
        case .continuation(let sequence):
            guard var reassembly = exchange.reassembly else { return [] }
            guard sequence == reassembly.nextSequence else {
                return fail(.outOfSequence(expected: reassembly.nextSequence, received: sequence))
            }
            // Out of `state` and `exchange` while it changes, so that the payload grows in place.
            state = .idle
            exchange.reassembly = nil
            reassembly.payload += packet.data.prefix(reassembly.expectedLength - reassembly.payload.count)
            if reassembly.payload.count == reassembly.expectedLength {
                return complete(exchange.command, payload: reassembly.payload)
            }
            reassembly.nextSequence += 1
            exchange.reassembly = reassembly
            state = .exchanging(exchange)
            return []
        }
    }

    // MARK: Transitions

    private mutating func allocate(nonce: UInt64, deadline: Instant, then request: Request?) -> [Action] {
        let nonceBytes = (0..<8).map { UInt8(truncatingIfNeeded: nonce >> (56 - 8 * $0)) }
        state = .allocating(Allocation(nonce: nonceBytes, deadline: deadline, request: request))
        let message = CTAPHIDMessage(uncheckedChannel: .broadcast, command: .initialize, payload: nonceBytes)
        return message.reports.map { .send(report: $0) }
    }

    private mutating func start(_ request: Request, on channel: ChannelID) -> [Action] {
        state = .exchanging(Exchange(channel: channel, command: request.command, deadline: request.deadline))
        let message = CTAPHIDMessage(uncheckedChannel: channel, command: request.command, payload: request.payload)
        return message.reports.map { .send(report: $0) }
    }

    private mutating func complete(_ command: CTAPHIDCommand, payload: [UInt8]) -> [Action] {
        state = .idle
        return [.response(command: command, payload: payload)]
    }

    /// Ends what is in progress with `error`; the channel is forgotten unless `keepChannel`.
    private mutating func fail(_ error: CTAPHIDHostError, keepChannel: Bool = false) -> [Action] {
        state = .idle
        if !keepChannel { channel = nil }
        return [.failed(error)]
    }

    private mutating func expire(now: Instant) -> [Action] {
        switch state {
        case .idle:
            return []
        case .allocating(let allocation):
            guard now >= allocation.deadline else { return [] }
            return fail(.channelAllocationTimedOut)
        case .exchanging(let exchange):
            guard now >= exchange.deadline else { return [] }
            if exchange.cancelled { return fail(.cancelled) }
            // A CBOR request may still be waiting for a touch: the device is told to stop.
            let cancel = exchange.command == .cbor ? [cancelReport(exchange.channel)] : []
            return cancel + fail(.responseTimedOut(exchange.command))
        }
    }

    private func cancelReport(_ channel: ChannelID) -> Action {
        .send(report: CTAPHIDMessage(uncheckedChannel: channel, command: .cancel, payload: []).reports[0])
    }
}
