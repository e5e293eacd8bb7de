import CBOR
import CTAP2
import CredentialExchange
import Crypto
import Foundation
import Hybrid
import HybridDriver
import HybridTestSupport
import HybridIO
import NearbyShare
import NearbyShareDriver
import Proximity
import Synchronization
import TestSupport
import Testing
import WebAuthn

/// Sharing one passkey nearby: the share QR code and messages alone, both sides' rules, then both links over the
/// in-memory relay and radio, honest and hostile.
struct ShareTests {
    static let random = SeededBytes(seed: 31)

    static func credential(backupEligible: Bool = true) -> StoredCredential {
        StoredCredential(
            id: random(16), relyingPartyID: "example.com", userHandle: random(16), userName: "alice",
            userDisplayName: "Alice", privateKey: P256.Signing.PrivateKey(compactRepresentable: false),
            isDiscoverable: true, backupEligible: backupEligible, backupState: backupEligible,
            creationDate: Date(timeIntervalSince1970: 1_790_000_000))
    }

    static func receiver() throws -> ShareReceiver {
        let hybrid = try QRCodePayload(
            clientKey: P256.KeyAgreement.PrivateKey(), secret: random(16), requestType: .getAssertion, timestamp: 7)
        return try ShareReceiver(hybrid: hybrid, sealingKey: P256.KeyAgreement.PrivateKey())
    }

    // MARK: QR code

    @Test func theShareCodeRoundTripsAndNeitherParserTakesTheOthersCode() throws {
        let code = try Self.receiver().qrCode
        #expect(code.url.hasPrefix("PASSKEY-SHARE:/"))
        #expect(code.url.dropFirst(ShareQRCode.prefix.count).allSatisfy { $0.isNumber })
        #expect(try ShareQRCode(url: code.url) == code)
        #expect(try ShareQRCode(url: code.url.lowercased()) == code)
        #expect(try ShareQRCode(cborBytes: code.cborBytes) == code)
        #expect(code.hybridPayload.secret == code.secret)
        #expect(code.hybridPayload.publicKey.compressedRepresentation == code.handshakeKey.compressedRepresentation)

        let digits = code.url.dropFirst(ShareQRCode.prefix.count)
        #expect(throws: QRCodeError.wrongType(key: 0)) { try QRCodePayload(url: "FIDO:/" + digits) }
        let hybrid = try QRCodePayload(
            clientKey: P256.KeyAgreement.PrivateKey(), secret: Self.random(16), requestType: .makeCredential,
            timestamp: 1)
        #expect(throws: ShareQRCodeError.missingPrefix) { try ShareQRCode(url: hybrid.url) }
        #expect(throws: ShareQRCodeError.wrongPurpose) {
            try ShareQRCode(url: "PASSKEY-SHARE:/" + hybrid.url.dropFirst(6))
        }
    }

    @Test func badShareMapsAreRefusedKeyByKey() throws {
        let code = try Self.receiver().qrCode
        let good = try #require(CBORValue(decoding: code.cborBytes).mapValue)
        func refuses(_ change: (inout [CBORValue: CBORValue]) -> Void) -> ShareQRCodeError? {
            var map = good
            change(&map)
            do {
                _ = try ShareQRCode(cborBytes: CBORValue.map(map).encoded())
                return nil
            } catch {
                return error
            }
        }
        #expect(refuses { $0[1] = 2 } == .unsupportedVersion)
        #expect(refuses { $0[1] = "1" } == .wrongType(key: 1))
        #expect(refuses { $0[2] = nil } == .missingKey(2))
        #expect(refuses { $0[3] = .bytes([1, 2]) } == .secretWrongLength(2))
        #expect(
            refuses { $0[4] = .bytes([2] + [UInt8](repeating: 0, count: 31)) } == .keyWrongLength(key: 4, count: 32))
        #expect(refuses { $0[4] = .bytes([5] + [UInt8](repeating: 1, count: 32)) } == .keyNotOnCurve(key: 4))
        #expect(refuses { $0[4] = $0[2] } == .keysNotDistinct)
        #expect(refuses { $0[5] = -1 } == .wrongType(key: 5))
        #expect(refuses { $0[0] = "passkey-shar" } == .wrongPurpose)
        #expect(refuses { $0[99] = "later" } == nil)
        #expect(throws: ShareQRCodeError.invalidDigits(.invalidRemainderLength(1))) {
            try ShareQRCode(url: "PASSKEY-SHARE:/1")
        }
    }

    // MARK: Both sides' rules

    @Test func theSenderAnswersOneShareRequestThenTheAcknowledgement() throws {
        var receiver = try Self.receiver()
        let credential = Self.credential()
        var sender = try ShareSender(credential, to: receiver.qrCode, at: Date())
        let hash = Self.random(32)
        let offer = sender.answer(receiver.request, handshakeHash: hash)
        #expect(sender.phase == .offered)
        let passkey = try receiver.open(offer, handshakeHash: hash)
        #expect(passkey.credential.id == credential.id)
        #expect(passkey.credential.privateKey.rawRepresentation == credential.privateKey.rawRepresentation)
        #expect(passkey.credential.userName == "alice")
        #expect(passkey.credential.creationDate == credential.creationDate)
        #expect(sender.answer(receiver.acknowledgement(.added), handshakeHash: hash) == [0x00])
        #expect(sender.phase == .acknowledged(.added))
        // Asked again after the acknowledgement: refused, and the share ends as failed.
        #expect(sender.answer(receiver.request, handshakeHash: hash) == [ShareSender.notAllowed])
        #expect(sender.phase == .failed(ShareError(.replayed, "")))
    }

    @Test func aSecondShareRequestInOneSessionIsRefused() throws {
        let receiver = try Self.receiver()
        var sender = try ShareSender(Self.credential(), to: receiver.qrCode, at: Date())
        _ = sender.answer(receiver.request, handshakeHash: [1])
        #expect(sender.answer(receiver.request, handshakeHash: [1]) == [ShareSender.notAllowed])
        #expect(sender.phase == .failed(ShareError(.replayed, "")))
    }

    @Test(arguments: [[UInt8](), [0x04], [0x41], [0x41, 0xA0], [0x42, 0xA1, 0x01, 0x00], [0x41, 0xA1, 0x01, 0x02]])
    func theSenderRefusesAnythingButAShareRequestFirst(_ request: [UInt8]) throws {
        var sender = try ShareSender(Self.credential(), to: Self.receiver().qrCode, at: Date())
        #expect(sender.answer(request, handshakeHash: [1]) == [ShareSender.invalidCommand])
        guard case .failed = sender.phase else {
            Issue.record("the sender went on after \(request)")
            return
        }
        // And nothing is shared afterwards.
        #expect(sender.answer(ShareRequestMessage.request(version: 1).bytes, handshakeHash: [1]).count == 1)
    }

    @Test func singleDevicePasskeysAreNeverShared() throws {
        #expect(throws: ShareError(.singleDevice, "")) {
            try ShareSender(Self.credential(backupEligible: false), to: Self.receiver().qrCode, at: Date())
        }
    }

    @Test func aShareMessageOpensOnlyInItsOwnSessionOnceAndUnchanged() throws {
        var receiver = try Self.receiver()
        var sender = try ShareSender(Self.credential(), to: receiver.qrCode, at: Date())
        let offer = sender.answer(receiver.request, handshakeHash: [UInt8](repeating: 1, count: 32))

        // Replayed into another session (another handshake hash): refused.
        var other = receiver
        #expect(throws: ShareError(.wrongKeyOrTampered, "")) {
            try other.open(offer, handshakeHash: [UInt8](repeating: 2, count: 32))
        }
        // Replayed to another receiver: refused.
        var stranger = try Self.receiver()
        #expect(throws: ShareError(.wrongKeyOrTampered, "")) {
            try stranger.open(offer, handshakeHash: [UInt8](repeating: 1, count: 32))
        }
        // Any flipped byte of the sealed item: refused.
        var flipped = offer
        flipped[flipped.count - 20] ^= 0x01
        var third = receiver
        #expect(throws: ShareError(.wrongKeyOrTampered, "")) {
            try third.open(flipped, handshakeHash: [UInt8](repeating: 1, count: 32))
        }
        // The real one opens, and a second message in the same session is refused, even the same bytes.
        _ = try receiver.open(offer, handshakeHash: [UInt8](repeating: 1, count: 32))
        #expect(throws: ShareError(.replayed, "")) {
            try receiver.open(offer, handshakeHash: [UInt8](repeating: 1, count: 32))
        }
    }

    @Test func malformedShareMessagesAreNamed() throws {
        #expect(throws: ShareError(.senderRefused, "")) { try ShareOffer(response: [0x30]) }
        #expect(throws: ShareError(.malformedMessage, "")) { try ShareOffer(response: [0x00, 0xA0]) }
        #expect(throws: ShareError(.malformedMessage, "")) { try ShareOffer(response: []) }
        let tooNew = [0x00] + CBORValue.map([1: 2, 2: .bytes([]), 3: .bytes([])]).encoded()
        #expect(throws: ShareError(.unsupportedVersion, "")) { try ShareOffer(response: tooNew) }
        #expect(throws: ShareError(.notASharePeer, "")) {
            try ShareProtocol.checkSenderInfo(CBORValue.map([1: ["FIDO_2_1"]]).encoded())
        }
        try ShareProtocol.checkSenderInfo(ShareProtocol.senderInfo)
        let request = ShareRequestMessage.acknowledge(ShareOutcome(rawValue: 9))
        #expect(try ShareRequestMessage(bytes: request.bytes) == request)
    }

    // MARK: Over the in-memory relay and radio

    /// Runs a receiver and a sender against each other; `tamper` may wrap the sender's tunnel.
    static func exchange(
        credential: StoredCredential, seed: UInt64 = 7, air: FakeAir = FakeAir(), relay: FakeRelay = FakeRelay(),
        senderTunnel: @escaping @Sendable (any HybridTunnel) -> any HybridTunnel = { $0 },
        answer: (@Sendable (ShareQRCode) -> @Sendable ([UInt8], [UInt8]) async -> [UInt8])? = nil,
        decide: @escaping @Sendable (ImportedPasskey) async throws -> ShareOutcome
    ) async -> (received: Result<ShareOutcome, any Error>, sent: Result<ShareOutcome, any Error>) {
        let relayURL = try? TunnelServerBaseURL(string: "ws://relay.test")
        let (codes, sink) = AsyncStream.makeStream(of: String.self)
        let senderRandom = SeededBytes(seed: seed &+ 100)
        let senderEnvironment = HybridEnvironment(
            openTunnel: { (url, _) async throws(TunnelError) -> any HybridTunnel in senderTunnel(try relay.open(url)) },
            randomBytes: { senderRandom($0) })
        let sending = Task { () async -> Result<ShareOutcome, any Error> in
            var iterator = codes.makeAsyncIterator()
            guard let url = await iterator.next() else { return .failure(CancellationError()) }
            do {
                let code = try ShareQRCode(url: url)
                if let answer = answer?(code) {
                    let phone = HybridAuthenticatorLink(
                        advertiser: air, tunnelServer: relayURL, timeouts: HybridLinkTests.timeouts, keepOpen: true,
                        environment: senderEnvironment)
                    _ = try await phone.serve(
                        qrCode: code.hybridPayload, getInfo: ShareProtocol.senderInfo, answer: answer)
                    return .success(.refused)
                }
                let sender = try ShareSender(credential, to: code, at: Date())
                return .success(
                    try await ShareSenderLink(
                        advertiser: air, tunnelServer: relayURL, timeouts: HybridLinkTests.timeouts,
                        environment: senderEnvironment
                    ).send(sender, to: code))
            } catch {
                return .failure(error)
            }
        }
        let receiving: Result<ShareOutcome, any Error>
        do {
            receiving = .success(
                try await ShareReceiverLink(
                    scanner: air, tunnelServer: relayURL, timeouts: HybridLinkTests.timeouts,
                    environment: HybridLinkTests.environment(relay: relay, random: SeededBytes(seed: seed))
                ).receive(
                    progress: { event in if case .showQRCode(let url) = event { sink.yield(url) } },
                    decide: decide))
        } catch {
            receiving = .failure(error)
        }
        sink.finish()
        return (receiving, await sending.value)
    }

    @Test func aPasskeyGoesToTheReceiverAndSignsThereAsItDidAtTheSender() async throws {
        let credential = Self.credential()
        let store = InMemoryCredentialStore()
        let (received, sent) = await Self.exchange(credential: credential) { passkey in
            try store.save(passkey.credential)
            return .added
        }
        #expect(try received.get() == .added)
        #expect(try sent.get() == .added)
        let kept = try #require(try store.credential(id: credential.id))
        #expect(kept.relyingPartyID == "example.com" && kept.userHandle == credential.userHandle)

        // The receiver's authenticator signs; the sender's public key (what the RP registered) verifies it.
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        let clientDataHash = Self.random(32)
        let request =
            [CTAPCommand.getAssertion.rawValue]
            + CBORValue.map([1: "example.com", 2: .bytes(clientDataHash)]).encoded()
        let response = await authenticator.handle(request)
        #expect(response.first == 0x00)
        let map = try #require(CBORValue(decoding: Array(response.dropFirst())).mapValue)
        let authenticatorData = try #require(map[2]?.bytesValue)
        let signature = try #require(map[3]?.bytesValue)
        #expect(credential.privateKey.publicKey.isValidSignature(signature, for: authenticatorData + clientDataHash))
    }

    @Test func withoutAnAdvertNothingIsReceived() async throws {
        let relay = FakeRelay()
        let decided = Mutex(false)
        do {
            _ = try await ShareReceiverLink(
                scanner: FakeAir(), timeouts: HybridTimeouts(all: .seconds(2)),
                environment: HybridLinkTests.environment(relay: relay) { _ in }
            ).receive(progress: { _ in }) { _ in
                decided.withLock { $0 = true }
                return .added
            }
            Issue.record("received without a sender")
        } catch let error as ShareLinkError {
            #expect(error == .hybrid(.session(.noNearbyAuthenticator(timeout: .seconds(2)))))
        }
        #expect(!decided.withLock { $0 })
        #expect(relay.opened.isEmpty)
    }

    /// A byte flipped in the Noise answer, the post-handshake message or the share message stores nothing on either
    /// side; flipped in the last answer, it comes after the decision, which stands.
    @Test(arguments: [0, 1, 2, 3])
    func aByteFlippedOnTheRelay(message: Int) async throws {
        // The sender's messages: 0 handshake, 1 post-handshake, 2 the share message, 3 the acknowledgement's answer.
        let decided = Mutex(false)
        let (received, sent) = await Self.exchange(
            credential: Self.credential(),
            senderTunnel: { FlippingTunnel(wrapping: $0, flipping: message) },
            decide: { _ in
                decided.withLock { $0 = true }
                return .added
            })
        if message < 3 {
            // Refused before the decision, and the sender hears of no acknowledgement.
            #expect(throws: (any Error).self) { try received.get() }
            #expect(throws: (any Error).self) { try sent.get() }
            #expect(!decided.withLock { $0 })
        } else {
            // A damaged answer to the acknowledgement comes after the decision, which stands on both sides.
            #expect(try received.get() == .added)
            #expect(try sent.get() == .added)
            #expect(decided.withLock { $0 })
        }
    }

    @Test func aShareMessageReplayedFromAnotherSessionIsRefused() async throws {
        // Session A: an honest sender, which also keeps the share message it sent.
        let credential = Self.credential()
        let recorded = Mutex<[UInt8]>([])
        let sessionA = await Self.exchange(
            credential: credential, seed: 1,
            answer: { code in
                let sender = Mutex(try? ShareSender(credential, to: code, at: Date()))
                return { request, hash in
                    let answer = sender.withLock { $0?.answer(request, handshakeHash: hash) } ?? [0x01]
                    if request.first == ShareCommand.request.rawValue { recorded.withLock { $0 = answer } }
                    return answer
                }
            },
            decide: { _ in .declined })
        #expect(try sessionA.received.get() == .declined)
        #expect(recorded.withLock { $0.count } > 100)

        // Session B: the same sender replays that message to a new receiver's request.
        let decided = Mutex(false)
        let acknowledgements = Mutex<[ShareRequestMessage]>([])
        let sessionB = await Self.exchange(
            credential: credential, seed: 2,
            answer: { _ in
                { request, _ in
                    if let message = try? ShareRequestMessage(bytes: request), case .acknowledge = message {
                        acknowledgements.withLock { $0.append(message) }
                        return [0x00]
                    }
                    return recorded.withLock { $0 }
                }
            },
            decide: { _ in
                decided.withLock { $0 = true }
                return .added
            })
        guard case .failure(let error as ShareLinkError) = sessionB.received else {
            Issue.record("the replayed message was taken: \(sessionB.received)")
            return
        }
        #expect(error == .share(ShareError(.wrongKeyOrTampered, "")))
        #expect(!decided.withLock { $0 })
        #expect(acknowledgements.withLock { $0 } == [.acknowledge(.refused)])
    }
}

/// A tunnel that flips one bit of the `index`th message it sends (counting from 0), as a hostile relay would.
final class FlippingTunnel: HybridTunnel {
    let wrapped: any HybridTunnel
    let index: Int
    private let sent = Mutex(0)

    init(wrapping wrapped: any HybridTunnel, flipping index: Int) {
        self.wrapped = wrapped
        self.index = index
    }

    var routingIDHeader: String? { wrapped.routingIDHeader }

    func send(_ message: [UInt8]) async throws(TunnelError) {
        var message = message
        let count = sent.withLock { count in
            defer { count += 1 }
            return count
        }
        if count == index, !message.isEmpty { message[message.count / 2] ^= 0x01 }
        try await wrapped.send(message)
    }

    func receive(timeout: Duration?) async throws(TunnelError) -> [UInt8]? {
        try await wrapped.receive(timeout: timeout)
    }
    func close() async { await wrapped.close() }
}
