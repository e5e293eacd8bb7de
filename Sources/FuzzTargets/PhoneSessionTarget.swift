import CBOR
import Crypto
import Hybrid

/// The phone's side of a hybrid session, fed a hostile client's and tunnel's events at every phase: before the
/// tunnel opens, before and after the handshake, while a request is processed, and after the session closed. The
/// client role has its own targets (`noise-initiator`, `client-session`); Chromium fuzzes both roles the same way
/// (`v2_handshake_fuzzer.cc`, `cablev2_authenticator_fuzzer`).
enum PhoneSessionTarget {
    private static let keys = SeededBytes(seed: 5)
    private static let qrKey = keys.keyAgreementKey()
    private static let clientEphemeral = keys.keyAgreementKey()
    private static let phoneEphemeral = keys.keyAgreementKey()
    private static let qrSecret = keys.bytes(QRCodePayload.secretByteCount)
    private static let advertNonce = keys.bytes(AdvertPlaintext.nonceByteCount)
    private static let routingID = try! RoutingID(bytes: [0x0A, 0x0B, 0x0C])
    private static let getInfo = CBORValue.map([1: ["FIDO_2_1"], 3: .bytes([UInt8](repeating: 0, count: 16))])
        .encoded()

    /// Each step is one byte, then what that step needs:
    /// - `0`: start (connect to the tunnel server);
    /// - `1`: the tunnel opened, with a chunk as the routing ID header (`2`: with the honest one);
    /// - `3`: a chunk delivered as a tunnel message as it is (a hostile handshake, or garbage after it);
    /// - `4`: the honest client's handshake message 1;
    /// - `5`: a chunk encrypted under the honest client's keys (once the handshake is done) and delivered;
    /// - `6`: the authenticator answers with a chunk;
    /// - `7`: the timer fires; `8`: the tunnel closes.
    static let phoneSession: FuzzTarget = FuzzTarget(
        name: "phone-session",
        summary: "the phone's hybrid session fed a hostile client's messages at every phase: never a request it did "
            + "not decrypt, one at a time, nothing after close",
        seeds: {
            let request = (try? TunnelFrame(type: .ctap, payload: [4]).plaintext(revision: .one)) ?? []
            let shutdown = (try? TunnelFrame(type: .shutdown, payload: []).plaintext(revision: .one)) ?? []
            let honest: [[UInt8]] = [
                [0], [2], [4], [5] + FuzzInput.chunks([request]), [6] + FuzzInput.chunks([[0, 0xA0]]),
            ]
            return [
                honest.flatMap { $0 },
                (honest + [[5] + FuzzInput.chunks([request]), [5] + FuzzInput.chunks([shutdown]), [8]]).flatMap { $0 },
                [0, 1] + FuzzInput.chunks([Array("0A0B0C".utf8)]) + [3]
                    + FuzzInput.chunks([[UInt8](repeating: 4, count: 81)]),
                [0, 2, 4, 7, 5] + FuzzInput.chunks([request]) + [8, 6] + FuzzInput.chunks([[0]]),
            ]
        },
        run: { input in
            guard
                let qrCode = try? QRCodePayload(
                    clientKey: qrKey, secret: qrSecret, requestType: .getAssertion, timestamp: 1_800_000_000),
                var session = try? HybridAuthenticatorSession(
                    qrCode: qrCode, getInfo: getInfo, ephemeralKey: phoneEphemeral, advertNonce: advertNonce,
                    keepOpen: (input.first ?? 0) & 0x80 != 0)
            else { fatalError("fuzz invariant broken: the session could not be set up") }
            let keepOpen = session.keepOpen
            var steps = FuzzInput(input)
            var client: ClientChannel? = nil
            var waiting: HandshakeInitiatorWaiting? = nil
            var handshakeMessages = 0
            var outstanding = false
            var closed = false
            var count = 0
            while count < 48, let step = steps.byte() {
                count += 1
                let actions: [HybridAuthenticatorSession.Action]
                switch step & 0x0F {
                case 0: actions = session.start()
                case 1:
                    actions = session.tunnelConnected(
                        routingIDHeader: String(decoding: steps.chunk() ?? [], as: UTF8.self))
                case 2: actions = session.tunnelConnected(routingID: routingID)
                case 3: actions = session.received(steps.chunk() ?? [])
                case 4:
                    let plaintext = try? AdvertPlaintext(nonce: advertNonce, routingID: routingID, domain: .google)
                    let psk = plaintext.map { KeyDerivation.psk(secret: qrSecret, advert: $0) } ?? []
                    guard
                        let made = try? HandshakeInitiator(
                            kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: clientEphemeral
                        ).makeMessage()
                    else { fatalError("fuzz invariant broken: message 1 could not be made") }
                    waiting = made.waiting
                    actions = session.received(made.message)
                case 5:
                    let chunk = steps.chunk() ?? []
                    guard let ciphertext = try? client?.crypter.encrypt(chunk) else { continue }
                    actions = session.received(ciphertext)
                case 6: actions = session.ctapResponse(steps.chunk() ?? [])
                case 7: actions = session.timerExpired()
                default: actions = session.tunnelClosed()
                }
                if closed {
                    expect(actions.isEmpty, "actions after the session closed: \(actions)")
                    continue
                }
                for action in actions {
                    switch action {
                    case .send(let message):
                        // The first two messages after an honest message 1 are message 2 and the post-handshake
                        // message: the honest client completes its handshake with them.
                        if let pending = waiting, handshakeMessages == 0 {
                            handshakeMessages = 1
                            waiting = nil
                            guard let result = try? pending.processResponse(message) else {
                                fatalError("fuzz invariant broken: the honest client refused message 2")
                            }
                            client = ClientChannel(crypter: result.crypter)
                        } else if handshakeMessages == 1, let channel = client {
                            handshakeMessages = 2
                            expect(
                                (try? channel.crypter.decrypt(message)) != nil,
                                "an undecryptable post-handshake message")
                        }
                    case .deliverCTAPRequest:
                        expect(!outstanding, "a second request delivered before the first was answered")
                        expect(step & 0x0F == 5, "a request delivered that the honest client did not encrypt")
                        expect(keepOpen || session.answeredRequests == 0, "a second request without keepOpen")
                        outstanding = true
                    case .close:
                        closed = true
                        expect(session.phase == .closed, "closed in phase \(session.phase)")
                    default:
                        break
                    }
                }
                if step & 0x0F == 6, session.phase != .processing { outstanding = false }
            }
        })
}

/// The honest client's half of the channel, once its handshake is done.
private final class ClientChannel {
    var crypter: Crypter

    init(crypter: consuming Crypter) { self.crypter = crypter }
}
