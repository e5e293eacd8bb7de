/// Packets and the messages they carry: routing initialization packets (channel checks, busy rules, resynchronization,
/// cancellation), reassembling continuation packets, and answering each complete message by its command.
extension CTAPHIDStateMachine {
    mutating func initializationPacket(
        channel: ChannelID,
        command: CTAPHIDCommand,
        length: Int,
        data: [UInt8],
        peer: Peer,
        now: Instant,
        into actions: inout [Action]
    ) {
        if channel == .reserved {
            actions += error(.invalidChannel, channel: channel, to: peer)
            return
        }
        if channel == .broadcast {
            guard command == .initialize else {
                actions += error(.invalidChannel, channel: channel, to: peer)
                return
            }
            guard length == 8 else {
                actions += error(.invalidLength, channel: channel, to: peer)
                return
            }
            guard let allocated = allocateChannel(for: peer) else {
                actions += error(.channelBusy, channel: channel, to: peer)
                return
            }
            actions += initResponse(channel: channel, nonce: data.prefix(8), allocated: allocated, to: peer)
            return
        }
        guard channels[channel] != nil else {
            actions += error(.invalidChannel, channel: channel, to: peer)
            return
        }
        touch(channel)

        let owner = state.owner ?? lock.map { ($0.channel, $0.peer) }
        if let owner, owner.channel != channel || owner.peer != peer {
            // CANCEL is never answered (CTAP 2.1 §11.2.9.1.5), not even with a busy error.
            if command != .cancel { actions += error(.channelBusy, channel: channel, to: peer) }
            return
        }

        switch state {
        case .idle:
            break
        case .reassembling:
            state = .idle
            guard command == .initialize else {
                actions += error(.invalidSequence, channel: channel, to: peer)
                return
            }
        case .processing(var pending):
            switch command {
            case .initialize:
                state = .idle
                actions.append(.cancel(pending.transaction))
            case .cancel:
                if !pending.cancelRequested {
                    pending.cancelRequested = true
                    state = .processing(pending)
                    actions.append(.cancel(pending.transaction))
                }
                return
            default:
                actions += error(.channelBusy, channel: channel, to: peer)
                return
            }
        }

        switch command {
        case .initialize:
            guard length == 8 else {
                actions += error(.invalidLength, channel: channel, to: peer)
                return
            }
            actions += initResponse(channel: channel, nonce: data.prefix(8), allocated: channel, to: peer)
        case .cancel:
            return  // Nothing outstanding to cancel.
        case .ping, .msg, .lock, .wink, .cbor:
            let lengthIsValid =
                switch command {
                case .cbor: length > 0
                case .lock: length == 1
                case .wink: length == 0
                default: true
                }
            guard lengthIsValid, length <= CTAPHIDPacket.maximumMessageLength else {
                actions += error(.invalidLength, channel: channel, to: peer)
                return
            }
            if length <= CTAPHIDPacket.initializationDataSize {
                message(
                    channel: channel, command: command, payload: Array(data.prefix(length)), peer: peer,
                    now: now, into: &actions)
            } else {
                var payload = data
                payload.reserveCapacity(length)
                let messageDeadline = now.advanced(by: configuration.messageTimeout)
                state = .reassembling(
                    Reassembly(
                        channel: channel, command: command, peer: peer, expectedLength: length, payload: payload,
                        nextSequence: 0,
                        deadline: min(now.advanced(by: configuration.transactionTimeout), messageDeadline),
                        messageDeadline: messageDeadline))
            }
        default:
            actions += error(.invalidCommand, channel: channel, to: peer)
        }
    }

    mutating func continuationPacket(
        channel: ChannelID,
        sequence: UInt8,
        data: [UInt8],
        peer: Peer,
        now: Instant,
        into actions: inout [Action]
    ) {
        // Spurious continuation packets (no transaction on this channel, or not from its peer) are ignored.
        guard case .reassembling(var reassembly) = state, reassembly.channel == channel, reassembly.peer == peer
        else { return }
        state = .idle  // Lets `reassembly.payload` grow in place.
        guard sequence == reassembly.nextSequence else {
            actions += error(.invalidSequence, channel: channel, to: reassembly.peer)
            return
        }
        let missing = reassembly.expectedLength - reassembly.payload.count
        reassembly.payload += data.prefix(missing)
        if reassembly.payload.count == reassembly.expectedLength {
            message(
                channel: channel, command: reassembly.command, payload: reassembly.payload, peer: reassembly.peer,
                now: now, into: &actions)
        } else {
            reassembly.nextSequence += 1
            reassembly.deadline = min(now.advanced(by: configuration.transactionTimeout), reassembly.messageDeadline)
            state = .reassembling(reassembly)
        }
    }

    // MARK: Messages

    /// A complete message of a command that needs its whole payload.
    private mutating func message(
        channel: ChannelID,
        command: CTAPHIDCommand,
        payload: [UInt8],
        peer: Peer,
        now: Instant,
        into actions: inout [Action]
    ) {
        switch command {
        case .ping:
            actions += send(CTAPHIDMessage(uncheckedChannel: channel, command: .ping, payload: payload), to: peer)
        case .msg:
            let statusWord = CTAP1StatusWord.answeringWithoutCTAP1(payload)
            actions += send(
                CTAPHIDMessage(uncheckedChannel: channel, command: .msg, payload: statusWord.bytes), to: peer)
        case .lock:
            guard let seconds = payload.first, seconds <= 10 else {
                actions += error(.invalidParameter, channel: channel, to: peer)
                return
            }
            if seconds == 0 {
                lock = nil
            } else {
                lock = Lock(channel: channel, peer: peer, expiry: now.advanced(by: .seconds(Int(seconds))))
            }
            actions += send(CTAPHIDMessage(uncheckedChannel: channel, command: .lock, payload: []), to: peer)
        case .wink:
            actions.append(.wink(channel))
            actions += send(CTAPHIDMessage(uncheckedChannel: channel, command: .wink, payload: []), to: peer)
        case .cbor:
            transactionCounter += 1
            let transaction = CBORTransactionID(channel: channel, serial: transactionCounter)
            state = .processing(
                PendingRequest(
                    transaction: transaction, peer: peer, status: .processing,
                    nextKeepalive: now.advanced(by: configuration.keepaliveInterval),
                    cancelRequested: false))
            actions.append(.dispatchCBOR(transaction, request: payload))
        default:
            actions += error(.invalidCommand, channel: channel, to: peer)
        }
    }
}
