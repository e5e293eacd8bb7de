import CBOR
import CTAP2
import CTAPHID
import Hybrid
import PasskeyProvider
import PasskeyStoreIO
import Synchronization
import TestSupport
import Testing
import WebAuthn
import WebAuthnClient

/// The phone behind the security key (issue 25) with phones that follow a script: where each request goes, the
/// keepalives while a phone is on its way, cancellation, a linked phone that is gone, and what the browser is told
/// when no phone answers.
@Suite(.timeLimit(.minutes(1)))
struct SecurityKeyBridgeTests {
    /// A phone that reports `steps`, then answers with `answer`; or, with `waitsForCancellation`, waits until its
    /// request is cancelled.
    final class FakePhone: ClientAuthenticator {
        struct Session: AuthenticatorSession {
            let phone: FakePhone
            var info: AuthenticatorInfo { AuthenticatorInfo(versions: ["FIDO_2_1"]) }
            func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
                phone.received.withLock { $0.append(message) }
                return try phone.answer.get()
            }
            func close() async { phone.closed.withLock { $0 += 1 } }
        }

        var kind: AuthenticatorKind { .hybrid }
        var transports: [AuthenticatorTransport] { [.hybrid] }
        let steps: [HybridClientProgress]
        let answer: Result<[UInt8], AuthenticatorTransportError>
        let waitsForCancellation: Bool
        let progress: @Sendable (HybridClientProgress) -> Void
        let received = Mutex<[[UInt8]]>([])
        let opened = Mutex(0)
        let closed = Mutex(0)
        let (waiting, waitingSink) = AsyncStream.makeStream(of: Void.self)

        init(
            steps: [HybridClientProgress], answer: Result<[UInt8], AuthenticatorTransportError>,
            waitsForCancellation: Bool = false, progress: @escaping @Sendable (HybridClientProgress) -> Void
        ) {
            self.steps = steps
            self.answer = answer
            self.waitsForCancellation = waitsForCancellation
            self.progress = progress
        }

        func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

        func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
            opened.withLock { $0 += 1 }
            for step in steps { progress(step) }
            if waitsForCancellation {
                waitingSink.yield()
                let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
                for await _ in stream {}
                continuation.finish()
                throw AuthenticatorTransportError("cancelled", kind: .cancelled)
            }
            return Session(phone: self)
        }
    }

    /// The phones of one test: one QR phone a request, and the linked phone, each made as the bridge asks.
    final class Phones: Sendable {
        let qrSteps: [HybridClientProgress] = [
            .showQRCode(url: "FIDO:/0123"), .advertSeen(routingID: try! RoutingID(bytes: [1, 2, 3]), domain: .google),
            .tunnelConnected(url: "wss://cable.ua5v.com/cable/connect/010203/AA"), .handshakeDone,
            .requestSent(command: 1), .responseReceived(status: 0),
        ]
        let qrAnswer: Result<[UInt8], AuthenticatorTransportError>
        let qrWaits: Bool
        let linkedAnswer: Result<[UInt8], AuthenticatorTransportError>?
        let made = Mutex<[FakePhone]>([])
        let linkedMade = Mutex<[FakePhone]>([])

        init(
            qrAnswer: Result<[UInt8], AuthenticatorTransportError> = .success(SecurityKeyBridgeTests.phoneAnswer),
            qrWaits: Bool = false, linkedAnswer: Result<[UInt8], AuthenticatorTransportError>? = nil
        ) {
            self.qrAnswer = qrAnswer
            self.qrWaits = qrWaits
            self.linkedAnswer = linkedAnswer
        }

        var bridgePhones: SecurityKeyBridge.Phones {
            SecurityKeyBridge.Phones(
                qrCode: { progress in
                    let phone = FakePhone(
                        steps: self.qrSteps, answer: self.qrAnswer, waitsForCancellation: self.qrWaits,
                        progress: progress)
                    self.made.withLock { $0.append(phone) }
                    return phone
                },
                linked: { progress in
                    guard let answer = self.linkedAnswer else { return nil }
                    let phone = FakePhone(
                        steps: [.contacting(url: "wss://relay.test/cable/contact/AA"), .linkedPhoneNear],
                        answer: answer, progress: progress)
                    self.linkedMade.withLock { $0.append(phone) }
                    return phone
                })
        }
    }

    /// What a phone answers: status 0, keys out of order and one no CTAP version defines (0x0A).
    static let phoneAnswer: [UInt8] = [0x00, 0xA2, 0x0A, 0x42, 0x01, 0x02, 0x01, 0x64] + Array("none".utf8)

    static func makeCredential(rp: String = "example.com", excludeList: [[UInt8]] = []) -> [UInt8] {
        var map: [CBORValue: CBORValue] = [
            1: .bytes([UInt8](repeating: 0xCD, count: 32)), 2: ["id": .text(rp)],
            3: ["id": .bytes([1, 2, 3]), "name": "alice"], 4: [["alg": -7, "type": "public-key"]],
            7: ["rk": true],
        ]
        if !excludeList.isEmpty { map[5] = .array(excludeList.map { ["type": "public-key", "id": .bytes($0)] }) }
        return [CTAPCommand.makeCredential.rawValue] + CBORValue.map(map).encoded()
    }

    static func getAssertion(rp: String = "example.com", allowList: [[UInt8]] = [], up: Bool? = nil) -> [UInt8] {
        var map: [CBORValue: CBORValue] = [1: .text(rp), 2: .bytes([UInt8](repeating: 0xCD, count: 32))]
        if !allowList.isEmpty { map[3] = .array(allowList.map { ["type": "public-key", "id": .bytes($0)] }) }
        if let up { map[5] = ["up": .bool(up)] }
        return [CTAPCommand.getAssertion.rawValue] + CBORValue.map(map).encoded()
    }

    /// A bridge over a fresh store; the person answers from `script`, and the store's own consent approves.
    static func bridge(
        _ directory: TemporaryDirectory, mode: PhoneBridgeMode, phones: Phones,
        person: ScriptedPerson = ScriptedPerson()
    ) throws -> SecurityKeyBridge {
        let store = try SecurityKeyServiceTests.store(directory)
        let key = try SecurityKeyService(
            store: store, options: .init(phoneBridge: true), consent: UnattendedApproval(), interface: person)
        return SecurityKeyBridge(key: key, mode: mode, phones: phones.bridgePhones, interface: person)
    }

    final class Keepalives: Sendable {
        let statuses = Mutex<[KeepaliveStatus]>([])
        var all: [KeepaliveStatus] { statuses.withLock { $0 } }
        var record: @Sendable (KeepaliveStatus) -> Void { { status in self.statuses.withLock { $0.append(status) } } }
    }

    @Test func aPhonesAnswerComesBackByteForByteAfterKeepalivesThatFollowItsSteps() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones()
        let person = ScriptedPerson()
        let bridge = try Self.bridge(directory, mode: .phoneOnly, phones: phones, person: person)
        let keepalives = Keepalives()
        let request = Self.makeCredential()
        let answer = await bridge.answer(request, keepalive: keepalives.record)
        #expect(answer == Self.phoneAnswer)
        #expect(phones.made.withLock { $0 }.map { $0.received.withLock { $0 } } == [[request]])
        #expect(phones.made.withLock { $0 }.map { $0.closed.withLock { $0 } } == [1])
        // Presence needed from the moment the request is routed and while the QR code is up; processing once the
        // phone is near, through the handshake and the request; the answer changes nothing.
        #expect(
            keepalives.all == [
                .userPresenceNeeded, .userPresenceNeeded, .processing, .processing, .processing, .processing,
            ])
        let bridgeEvents = person.events.compactMap { if case .bridge(let event) = $0 { event } else { nil } }
        #expect(bridgeEvents.first == .toPhone(command: CTAPCommand.makeCredential.rawValue, linked: false))
        #expect(bridgeEvents.last == .answered(status: 0))
        #expect(person.prompts.isEmpty)
    }

    @Test func aCancelledRequestEndsThePhonesSessionAndAnswersKeepaliveCancel() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones(qrWaits: true)
        let bridge = try Self.bridge(directory, mode: .phoneOnly, phones: phones)
        let keepalives = Keepalives()
        let request = Self.getAssertion()
        let answering = Task { await bridge.answer(request, keepalive: keepalives.record) }
        // Wait until the phone is waiting (its QR code is up).
        while phones.made.withLock({ $0.isEmpty }) { await Task.yield() }
        var waiting = try #require(phones.made.withLock { $0.first }).waiting.makeAsyncIterator()
        await waiting.next()
        answering.cancel()
        #expect(await answering.value == [CTAPError.keepaliveCancel.rawValue])
        let count = keepalives.all.count
        await Task.yield()
        #expect(keepalives.all.count == count)
    }

    @Test func aSignInTheStoreCanAnswerNeverReachesAPhone() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones()
        let bridge = try Self.bridge(
            directory, mode: .phoneFallback, phones: phones, person: ScriptedPerson([.pick(0)]))
        // A passkey made on this computer (the person picks it), then a sign-in with its ID.
        let made = await bridge.answer(Self.makeCredential(), keepalive: { _ in })
        #expect(made.first == 0x00)
        let body = try CBORValue(decoding: Array(made.dropFirst()))
        let authData = try AuthenticatorData(bytes: try #require(body.mapValue?[2]?.bytesValue))
        let id = try #require(authData.attestedCredentialData?.credentialID)
        let signIn = await bridge.answer(Self.getAssertion(allowList: [id]), keepalive: { _ in })
        #expect(signIn.first == 0x00)
        #expect(phones.made.withLock { $0 }.isEmpty)
        // An ID the store does not hold goes to a phone; so does a discoverable sign-in for another site.
        #expect(
            await bridge.answer(Self.getAssertion(allowList: [[9, 9, 9]]), keepalive: { _ in }) == Self.phoneAnswer)
        #expect(await bridge.answer(Self.getAssertion(rp: "other.example"), keepalive: { _ in }) == Self.phoneAnswer)
        #expect(phones.made.withLock { $0 }.count == 2)
        // A pre-flight (up false) of an unknown ID is answered here, and never shows a QR code.
        let preflight = await bridge.answer(Self.getAssertion(allowList: [[9, 9, 9]], up: false), keepalive: { _ in })
        #expect(preflight == [CTAPError.noCredentials.rawValue])
        #expect(phones.made.withLock { $0 }.count == 2)
    }

    @Test func whereToCreateIsThePersonsChoice() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones()
        let person = ScriptedPerson([.pick(1), .no, .cancel])
        let bridge = try Self.bridge(directory, mode: .phoneFallback, phones: phones, person: person)
        #expect(await bridge.answer(Self.makeCredential(), keepalive: { _ in }) == Self.phoneAnswer)
        #expect(await bridge.answer(Self.makeCredential(), keepalive: { _ in }) == [CTAPError.operationDenied.rawValue])
        #expect(await bridge.answer(Self.makeCredential(), keepalive: { _ in }) == [CTAPError.keepaliveCancel.rawValue])
        #expect(phones.made.withLock { $0 }.count == 1)
        #expect(person.prompts.first == .choose(.whereToCreate(relyingPartyID: "example.com", userName: "alice")))

        // Unattended (--yes), a creation stays on this computer, and says so.
        let other = try TemporaryDirectory()
        let unattended = ScriptedPerson()
        let store = try SecurityKeyServiceTests.store(other)
        let key = try SecurityKeyService(
            store: store, options: .init(phoneBridge: true), consent: UnattendedApproval(), interface: unattended)
        let unattendedBridge = SecurityKeyBridge(
            key: key, mode: .phoneFallback, phones: phones.bridgePhones, interface: unattended,
            unattendedReason: "--yes")
        #expect(await unattendedBridge.answer(Self.makeCredential(), keepalive: { _ in }).first == 0x00)
        #expect(unattended.prompts.isEmpty && phones.made.withLock { $0 }.count == 1)
        #expect(try store.allCredentials().map(\.relyingPartyID) == ["example.com"])
    }

    @Test func refusalsAndTheNextAssertionAfterAPhonesSignIn() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones()
        let only = try Self.bridge(directory, mode: .phoneOnly, phones: phones)
        #expect(await only.answer([CTAPCommand.clientPIN.rawValue, 0xA0], keepalive: { _ in }) == [0x01])
        #expect(await only.answer([CTAPCommand.reset.rawValue], keepalive: { _ in }) == [0x30])
        let info = await only.answer([CTAPCommand.getInfo.rawValue], keepalive: { _ in })
        #expect(info.first == 0x00)

        let other = try TemporaryDirectory()
        let fallback = try Self.bridge(other, mode: .phoneFallback, phones: phones)
        #expect(await fallback.answer(Self.getAssertion(), keepalive: { _ in }) == Self.phoneAnswer)
        #expect(await fallback.answer([CTAPCommand.getNextAssertion.rawValue], keepalive: { _ in }) == [0x30])
    }

    @Test func aLinkedPhoneThatIsGoneFallsBackToAQRCodeInTheSameRequest() async throws {
        let directory = try TemporaryDirectory()
        let gone = AuthenticatorTransportError("the phone revoked this computer's link", kind: .linkGone)
        let phones = Phones(linkedAnswer: .failure(gone))
        let person = ScriptedPerson()
        let bridge = try Self.bridge(directory, mode: .phoneOnly, phones: phones, person: person)
        let keepalives = Keepalives()
        #expect(await bridge.answer(Self.getAssertion(), keepalive: keepalives.record) == Self.phoneAnswer)
        #expect(phones.linkedMade.withLock { $0 }.count == 1 && phones.made.withLock { $0 }.count == 1)
        let bridgeEvents = person.events.compactMap { if case .bridge(let event) = $0 { event } else { nil } }
        #expect(bridgeEvents.contains(.linkedPhoneFailed(reason: gone.description)))
        #expect(bridgeEvents.contains(.toPhone(command: CTAPCommand.getAssertion.rawValue, linked: false)))
        // While the linked phone is woken: presence needed; near: processing; then the QR code: presence again.
        #expect(Array(keepalives.all.prefix(3)) == [.userPresenceNeeded, .userPresenceNeeded, .processing])
        #expect(keepalives.all.dropFirst(3).first == .userPresenceNeeded)
    }

    @Test func aLinkedPhoneThatAnswersShowsNoQRCode() async throws {
        let directory = try TemporaryDirectory()
        let phones = Phones(linkedAnswer: .success(Self.phoneAnswer))
        let bridge = try Self.bridge(directory, mode: .phoneOnly, phones: phones)
        #expect(await bridge.answer(Self.getAssertion(), keepalive: { _ in }) == Self.phoneAnswer)
        #expect(phones.made.withLock { $0 }.isEmpty)
    }

    @Test(arguments: [
        (AuthenticatorTransportError.Kind.timedOut, CTAPError.userActionTimeout),
        (.failed, .other), (.cancelled, .keepaliveCancel),
    ])
    func whatTheBrowserIsToldWhenNoPhoneAnswers(kind: AuthenticatorTransportError.Kind, status: CTAPError) async throws
    {
        let directory = try TemporaryDirectory()
        let phones = Phones(qrAnswer: .failure(AuthenticatorTransportError("no phone", kind: kind)))
        let person = ScriptedPerson()
        let bridge = try Self.bridge(directory, mode: .phoneOnly, phones: phones, person: person)
        #expect(await bridge.answer(Self.getAssertion(), keepalive: { _ in }) == [status.rawValue])
        let bridgeEvents = person.events.compactMap { if case .bridge(let event) = $0 { event } else { nil } }
        #expect(bridgeEvents.last == .failed(reason: "no phone", status: status.rawValue))
    }
}
