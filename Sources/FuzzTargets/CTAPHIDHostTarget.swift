import CTAPHID

/// The host's side of CTAPHID: the platform talking to a security key that may lie.
enum CTAPHIDHostTarget {
    /// A script of events for a host state machine, with an honest device state machine on the other end that the
    /// script can let answer. Each step starts with one byte `b`:
    /// `b % 6 == 0` a 64-byte report from the device (the next 64 bytes); `1` time passes (next byte × 10 ms);
    /// `2` the caller starts an exchange (next byte: the command, two bytes: the length, one byte: the deadline in
    /// 20 ms steps); `3` the caller cancels; `4` the honest device reads what the host sent and answers (CBOR
    /// requests with the next byte × 31 bytes, not at all when it is 0), one answer byte flipped when `b & 0x80`; `5`
    /// the device sends a keepalive with the next byte as its status.
    static let ctaphidHost: FuzzTarget = FuzzTarget(
        name: "ctaphid-host",
        summary: "CTAPHID host state machine against lying and honest devices: one outcome per exchange, valid framing",
        seeds: {
            let channel: [UInt8] = [0, 0, 0, 1]
            let nonce: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
            func report(_ bytes: [UInt8]) -> [UInt8] { [0] + bytes + [UInt8](repeating: 0, count: 64 - bytes.count) }
            let initResponse = report([0xFF, 0xFF, 0xFF, 0xFF, 0x86, 0, 17] + nonce + channel + [2, 1, 0, 0, 0x0D])
            return [
                // getInfo through the honest device, a ping of 7609 bytes, a wink.
                [2, 0, 0, 1, 50, 4, 10, 2, 1, 0x1D, 0xB9, 50, 4, 0, 2, 2, 0, 0, 50, 4, 0],
                // A lying device: an INIT response, then a response in pieces with a bad sequence number.
                [2, 0, 0, 1, 50] + initResponse + report(channel + [0x90, 0, 100, 0]) + report(channel + [0, 1])
                    + report(channel + [2]),
                // Keepalives, a cancel and its grace period, then an error.
                [2, 0, 0, 1, 50, 4, 0, 5, 1, 1, 10, 3, 1, 100, 2, 1, 0, 8, 10] + report(channel + [0xBF, 0, 1, 0x06]),
                // A corrupted answer.
                [2, 1, 0, 80, 50, 0x82, 0],
            ]
        },
        run: { input in
            var checker = Checker()
            var script = FuzzInput(input)
            var steps = 0
            while steps < 256, let operation = script.byte() {
                steps += 1
                switch operation % 6 {
                case 0:
                    var report = script.take(CTAPHIDPacket.reportSize)
                    report += [UInt8](repeating: 0, count: CTAPHIDPacket.reportSize - report.count)
                    checker.fromDevice(report)
                case 1:
                    checker.now = checker.now.advanced(by: .milliseconds(10 * Int(script.byte() ?? 0)))
                    checker.check(checker.host.tick(now: checker.now))
                    if let deadline = checker.host.nextDeadline {
                        expect(deadline > checker.now, "a deadline that passed without the exchange ending")
                    }
                    checker.deviceTick()
                case 2:
                    let selector = script.byte() ?? 0
                    let length = Int(script.byte() ?? 0) << 8 | Int(script.byte() ?? 0)
                    let deadline = checker.now.advanced(by: .milliseconds(20 * Int(script.byte() ?? 0)))
                    checker.start(selector: selector, length: length, deadline: deadline)
                case 3:
                    checker.check(checker.host.cancel(now: checker.now))
                case 4:
                    checker.deviceAnswers(answerLength: 31 * Int(script.byte() ?? 0), corrupt: operation & 0x80 != 0)
                default:
                    checker.deviceKeepalive(script.byte() ?? 0)
                }
            }
        })

    /// The host, an honest device beside it, and what the host's caller may expect next.
    struct Checker {
        var host = CTAPHIDHostStateMachine()
        var device = CTAPHIDStateMachine<UInt8>(channelIDSource: CTAPTargets.CountingGenerator())
        var now = CTAPTargets.startOfRun
        var nonce: UInt64 = 0
        /// Reports the host sent that the device has not read yet.
        var sent: [[UInt8]] = []
        var latestTransaction: CBORTransactionID?
        /// What the caller waits for: nothing, a channel alone, or the response to a command.
        var outstanding: Outstanding?
        var corruptions = 0

        enum Outstanding {
            case allocation
            case exchange(CTAPHIDCommand)
        }

        mutating func start(selector: UInt8, length: Int, deadline: ContinuousClock.Instant) {
            nonce += 1
            let commands: [CTAPHIDCommand] = [.cbor, .ping, .wink, .msg, .initialize, CTAPHIDCommand(rawValue: 0x50)]
            let wasBusy = host.isBusy
            if selector == 0xFF {
                do throws(CTAPHIDHostError) {
                    let previous = outstanding
                    outstanding = .allocation
                    do throws(CTAPHIDHostError) {
                        check(try host.allocateChannel(nonce: nonce, now: now, deadline: deadline))
                    } catch {
                        outstanding = previous
                        throw error
                    }
                } catch {
                    expect(error == .busy && wasBusy, "an allocation refused with \(error)")
                }
                return
            }
            let command = commands[Int(selector) % commands.count]
            let payload = (0..<length % 7700).map { UInt8(truncatingIfNeeded: $0) }
            // Set first, as `check` reads it; a refusal puts it back.
            let previous = outstanding
            outstanding = .exchange(command)
            do throws(CTAPHIDHostError) {
                check(try host.send(command: command, payload: payload, nonce: nonce, now: now, deadline: deadline))
            } catch {
                outstanding = previous
                switch error {
                case .busy: expect(wasBusy, "refused as busy while idle")
                case .messageTooLong(let count):
                    expect(count > 7609 && count == payload.count, "refused \(count) bytes")
                case .commandNotSendable(let refused): expect(refused == .initialize, "refused \(refused)")
                default: expect(false, "send threw \(error)")
                }
                expect(host.isBusy == wasBusy, "a refused send changed the state")
            }
        }

        mutating func fromDevice(_ report: [UInt8]) {
            do {
                check(try host.receive(report: report, now: now))
            } catch {
                expect(false, "a 64-byte report was refused: \(error)")
            }
        }

        mutating func deviceTick() {
            deviceActions(device.tick(now: now), corrupt: false)
        }

        mutating func deviceAnswers(answerLength: Int, corrupt: Bool) {
            // The device's answers make the host send more (its message once a channel is allocated): a few rounds.
            for _ in 0..<4 where !sent.isEmpty {
                let reports = sent
                sent = []
                for report in reports {
                    deviceActions((try? device.receive(report: report, from: 0, now: now)) ?? [], corrupt: corrupt)
                }
            }
            if answerLength > 0, let transaction = latestTransaction {
                latestTransaction = nil
                let answer = [0] + [UInt8](repeating: 0xA0, count: min(answerLength, 7000))
                deviceActions(device.cborResponse(answer, for: transaction, now: now), corrupt: corrupt)
            }
        }

        mutating func deviceKeepalive(_ status: UInt8) {
            guard let transaction = latestTransaction else { return }
            let keepalive: KeepaliveStatus = status & 1 == 0 ? .processing : .userPresenceNeeded
            deviceActions(device.keepaliveStatus(keepalive, for: transaction, now: now), corrupt: false)
        }

        private mutating func deviceActions(_ actions: [CTAPHIDStateMachine<UInt8>.Action], corrupt: Bool) {
            for action in actions {
                switch action {
                case .send(var report, _):
                    if corrupt && corruptions == 0 {
                        corruptions += 1
                        report[Int(nonce % 64)] ^= 0x5A
                    }
                    fromDevice(report)
                case .dispatchCBOR(let transaction, _):
                    latestTransaction = transaction
                case .cancel, .wink:
                    break
                }
            }
        }

        /// The invariants of one event's actions.
        mutating func check(_ actions: [CTAPHIDHostStateMachine.Action]) {
            for action in actions {
                switch action {
                case .send(let report):
                    expect(report.count == CTAPHIDPacket.reportSize, "a report of \(report.count) bytes")
                    guard let packet = try? CTAPHIDPacket(report: report) else {
                        expect(false, "a report that does not parse")
                        return
                    }
                    if case .initialization(.initialize, _) = packet.kind {
                        expect(packet.channel == .broadcast, "INIT on \(packet.channel)")
                    } else {
                        expect(
                            packet.channel != .broadcast && packet.channel != .reserved,
                            "a message on \(packet.channel)")
                    }
                    sent.append(report)
                case .channelAllocated(let info):
                    expect(info.channel != .broadcast && info.channel != .reserved, "assigned \(info.channel)")
                    expect(outstanding != nil, "a channel nobody asked for")
                    if case .allocation? = outstanding { outstanding = nil }
                case .keepalive:
                    expect(outstanding != nil, "a keepalive outside an exchange")
                case .response(let command, let payload):
                    guard case .exchange(let expected)? = outstanding else {
                        expect(false, "a response nobody waits for")
                        return
                    }
                    expect(command == expected, "a \(command) response to \(expected)")
                    expect(payload.count <= CTAPHIDPacket.maximumMessageLength, "a response of \(payload.count) bytes")
                    outstanding = nil
                case .failed:
                    expect(outstanding != nil, "a failure of nothing")
                    outstanding = nil
                }
            }
            expect(
                host.isBusy == (outstanding != nil), "busy is \(host.isBusy) with \(String(describing: outstanding))")
            expect((host.nextDeadline == nil) == !host.isBusy, "a deadline without an exchange, or none with one")
            if let channel = host.channel {
                expect(channel != .broadcast && channel != .reserved, "the host trusts channel \(channel)")
            }
        }
    }
}
