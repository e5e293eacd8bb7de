import CBOR
import CTAP2
import CTAPHID
import Crypto
import Foundation
import Synchronization
import UHID

/// The authenticator's inputs: CTAP2 requests, CTAPHID reports and uhid events.
enum CTAPTargets {
    // MARK: CTAP2

    /// CTAP2 messages (command byte and CBOR), one per chunk, to one authenticator with an in-memory store that
    /// already holds a discoverable passkey for example.com and approves every request.
    static let ctap2: FuzzTarget = FuzzTarget(
        name: "ctap2",
        summary: "CTAP2 requests through Authenticator.handle: every answer is a status byte and canonical CBOR",
        seeds: {
            [
                [[CTAPCommand.getInfo.rawValue]],
                [makeCredential(userID: [9, 9], name: "bob", extensions: true)],
                [getAssertion(), [CTAPCommand.getNextAssertion.rawValue]],
                [clientPIN([1: 2, 2: 2]), clientPIN([1: 2, 2: 1])],
                [[CTAPCommand.selection.rawValue], [CTAPCommand.reset.rawValue]],
                [[CTAPCommand.largeBlobs.rawValue] + CBORValue.map([1: 1024, 3: 0]).encoded()],
                [[CTAPCommand.credentialManagement.rawValue] + CBORValue.map([1: 1]).encoded()],
                [[CTAPCommand.config.rawValue] + CBORValue.map([1: 1]).encoded()],
                // CTAP 2.2: hmac-secret-mc and thirdPartyPayment at registration, thirdPartyPayment at sign-in, the
                // persistent read-only token through built-in verification, then a metadata read.
                [makeCredential(userID: [7], name: "carol", extensions: true, ctap22: true)],
                [getAssertion(extensions: ["thirdPartyPayment": true])],
                [
                    clientPIN([1: 2, 2: 6, 3: platformKey, 9: 0x40]),
                    [CTAPCommand.credentialManagement.rawValue]
                        + CBORValue.map([1: 1, 3: 2, 4: .bytes([UInt8](repeating: 0x11, count: 32))]).encoded(),
                    [CTAPCommand.getInfo.rawValue],
                ],
            ].map(FuzzInput.chunks)
        },
        run: { input in
            let random = SeededBytes(seed: 1)
            let clock = Mutex(Self.startOfRun)
            let authenticator = Authenticator(
                environment: AuthenticatorEnvironment(
                    store: InMemoryCredentialStore(capacity: 16),
                    userInteraction: UnattendedApproval(),
                    randomBytes: { random.bytes($0) },
                    now: { clock.withLock { $0 } },
                    currentDate: { Date(timeIntervalSince1970: 1_800_000_000) }))
            var messages = FuzzInput(input)
            var requests = [makeCredential(userID: [1, 2, 3, 4], name: "alice", extensions: false)]
            while requests.count < 16, let message = messages.chunk() { requests.append(message) }
            for request in requests {
                let response = runBlocking { await authenticator.handle(request) }
                expect(!response.isEmpty, "an empty answer to \(request.prefix(1))")
                if response[0] == 0, response.count > 1 {
                    expect(
                        (try? CBORValue(decoding: response.dropFirst())) != nil,
                        "a success answer whose body is not canonical CBOR")
                }
                clock.withLock { $0 = $0.advanced(by: .milliseconds(250)) }
            }
        })

    /// One instant for every run, so that timeouts measured from it replay the same way.
    static let startOfRun = ContinuousClock.now

    /// A fixed platform key agreement key (COSE), so that seeds that carry one are the same on every run.
    static let platformKey: CBORValue = {
        let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x42, count: 32))
        return key.map { PinUvAuthProtocol.coseKey($0.publicKey) } ?? [:]
    }()

    private static func makeCredential(
        userID: [UInt8], name: String, extensions: Bool, ctap22: Bool = false
    ) -> [UInt8] {
        var parameters: [CBORValue: CBORValue] = [
            1: .bytes([UInt8](repeating: 0xCD, count: 32)),
            2: ["id": "example.com", "name": "Example"],
            3: ["id": .bytes(userID), "name": .text(name), "displayName": .text(name.capitalized)],
            4: [["alg": -7, "type": "public-key"]],
            7: ["rk": true],
        ]
        if extensions {
            parameters[6] = [
                "credProtect": 2, "hmac-secret": true, "credBlob": .bytes([1, 2, 3]), "largeBlobKey": true,
            ]
        }
        if ctap22 {
            parameters[6] = [
                "hmac-secret": true, "thirdPartyPayment": true,
                "hmac-secret-mc": [
                    1: platformKey, 2: .bytes([UInt8](repeating: 0x5A, count: 48)),
                    3: .bytes([UInt8](repeating: 0x33, count: 32)), 4: 2,
                ],
            ]
        }
        return [CTAPCommand.makeCredential.rawValue] + CBORValue.map(parameters).encoded()
    }

    private static func getAssertion(extensions: CBORValue? = nil) -> [UInt8] {
        var parameters: [CBORValue: CBORValue] = [
            1: "example.com", 2: .bytes([UInt8](repeating: 0xAB, count: 32)), 5: ["up": true],
        ]
        if let extensions { parameters[4] = extensions }
        return [CTAPCommand.getAssertion.rawValue] + CBORValue.map(parameters).encoded()
    }

    private static func clientPIN(_ parameters: CBORValue) -> [UInt8] {
        [CTAPCommand.clientPIN.rawValue] + parameters.encoded()
    }

    // MARK: CTAPHID

    /// A script of events for a CTAPHID state machine with two peers. Each step starts with one byte:
    /// `b % 4 == 0` a 64-byte report from peer `(b >> 2) & 1`; `1` time passes (next byte × 10 ms);
    /// `2` the authenticator answers the latest request (next two bytes: the length); `3` a keepalive status.
    static let ctaphid: FuzzTarget = FuzzTarget(
        name: "ctaphid",
        summary: "CTAPHID state machine fed reports from two peers, clock ticks and answers: framing stays valid",
        seeds: {
            let initialize = [UInt8](repeating: 0xFF, count: 4) + [0x86, 0, 8] + [1, 2, 3, 4, 5, 6, 7, 8]
            let channel: [UInt8] = [0, 0, 0, 1]
            let getInfo = channel + [0x90, 0, 1, 0x04]
            let ping =
                (try? CTAPHIDMessage(
                    channel: ChannelID(rawValue: 1), command: .ping, payload: [UInt8](repeating: 0x5A, count: 200)))?
                .reports ?? []
            func report(_ bytes: [UInt8], peer: UInt8 = 0) -> [UInt8] {
                [peer << 2] + bytes + [UInt8](repeating: 0, count: 64 - bytes.count)
            }
            return [
                report(initialize) + report(getInfo) + [1, 5, 2, 0, 40],
                report(initialize) + ping.flatMap { report($0) } + [1, 100],
                report(initialize) + report(getInfo) + [3, 2, 1, 20] + report(channel + [0x91, 0, 0]) + [2, 0, 1],
                report(initialize) + report(channel + [0x84, 0, 1, 10]) + report(initialize, peer: 1)
                    + report(getInfo, peer: 1),
                report(initialize) + report(channel + [0x90, 0x01, 0x00, 0x04]) + report(channel + [0]) + [1, 60],
            ]
        },
        run: { input in
            var machine = CTAPHIDStateMachine<UInt8>(channelIDSource: CountingGenerator())
            var script = FuzzInput(input)
            var now = startOfRun
            var latest: CBORTransactionID?
            var steps = 0
            while steps < 512, let operation = script.byte() {
                steps += 1
                let actions: [CTAPHIDStateMachine<UInt8>.Action]
                switch operation % 4 {
                case 0:
                    var report = script.take(CTAPHIDPacket.reportSize)
                    report += [UInt8](repeating: 0, count: CTAPHIDPacket.reportSize - report.count)
                    do {
                        actions = try machine.receive(report: report, from: (operation >> 2) & 1, now: now)
                    } catch {
                        fatalError("a 64-byte report was refused: \(error)")
                    }
                case 1:
                    now = now.advanced(by: .milliseconds(10 * Int(script.byte() ?? 0)))
                    actions = machine.tick(now: now)
                case 2:
                    guard let transaction = latest else { continue }
                    let length = Int(script.byte() ?? 0) << 8 | Int(script.byte() ?? 0)
                    actions = machine.cborResponse(
                        [0] + [UInt8](repeating: 0xA0, count: length), for: transaction, now: now)
                default:
                    guard let transaction = latest else { continue }
                    let status: KeepaliveStatus = (script.byte() ?? 0) & 1 == 0 ? .processing : .userPresenceNeeded
                    actions = machine.keepaliveStatus(status, for: transaction, now: now)
                }
                for action in actions {
                    switch action {
                    case .send(let report, let peer):
                        expect(report.count == CTAPHIDPacket.reportSize, "a report of \(report.count) bytes")
                        expect(peer < 2, "a report for a peer that never wrote")
                        expect((try? CTAPHIDPacket(report: report)) != nil, "a report that does not parse")
                    case .dispatchCBOR(let transaction, let request):
                        expect(!request.isEmpty, "an empty CBOR request was dispatched")
                        expect(request.count <= CTAPHIDPacket.maximumMessageLength, "an oversized request")
                        latest = transaction
                    case .cancel, .wink:
                        break
                    }
                }
                expect(
                    machine.allocatedChannels.count <= machine.configuration.maximumChannels,
                    "more channels than the configured maximum")
            }
        })

    /// Channel identifiers 1, 2, 3…: reproducible, and predictable for the seeds.
    struct CountingGenerator: RandomNumberGenerator, Sendable {
        private var count: UInt64 = 0
        mutating func next() -> UInt64 {
            count += 1
            return count
        }
    }

    // MARK: uhid

    static let uhid: FuzzTarget = FuzzTarget(
        name: "uhid",
        summary: "uhid event codec: a parsed event re-encodes to 4380 bytes that parse to the same event",
        seeds: {
            let events: [UHIDEvent] = [
                .start(flags: 7), .open, .close, .stop,
                .output(data: [0] + [UInt8](repeating: 0x11, count: 64), type: UHIDReportType(rawValue: 1)),
                .getReport(id: 9, reportNumber: 0, type: UHIDReportType(rawValue: 0)),
                .setReport(id: 3, reportNumber: 1, type: UHIDReportType(rawValue: 2), data: [1, 2, 3]),
            ]
            let create =
                (try? UHIDCreate2(name: "passkey", bus: 3, vendor: 0x1209, product: 0x5, descriptor: [6, 0xD0]))
                .map { UHIDEvent.create2($0) }
            return (events + [create].compactMap { $0 }).compactMap { try? $0.bytes() }
        },
        run: { input in
            guard let event = try? UHIDEvent(bytes: input) else { return }
            // Events the codec reads but never writes are fine; those it writes must round-trip.
            guard let bytes = try? event.bytes() else { return }
            expect(bytes.count == 4380, "an encoded event of \(bytes.count) bytes")
            expect((try? UHIDEvent(bytes: bytes)) == event, "an event that does not survive a round trip")
        })
}
