import CBOR
import CTAP2
import CredentialExchange
import Crypto
import Foundation
import Hybrid
import NearbyShare

/// Sharing a passkey nearby: the share QR code, and the messages both sides parse from the tunnel.
enum ShareTargets {
    private static let keys = SeededBytes(seed: 5)
    private static let handshakeKey = keys.keyAgreementKey()
    private static let sealingKey = keys.keyAgreementKey()
    private static let secret = keys.bytes(QRCodePayload.secretByteCount)
    private static let handshakeHash = keys.bytes(32)
    private static let qrCode = try? ShareQRCode(
        handshakeKey: handshakeKey.publicKey, secret: secret, sealingKey: sealingKey.publicKey,
        timestamp: 1_800_000_000)
    private static let credential = StoredCredential(
        id: keys.bytes(16), relyingPartyID: "example.com", userHandle: keys.bytes(16), userName: "alice",
        privateKey: (try? P256.Signing.PrivateKey(rawRepresentation: keys.bytes(32))) ?? P256.Signing.PrivateKey(),
        isDiscoverable: true, backupEligible: true, backupState: true,
        creationDate: Date(timeIntervalSince1970: 1_800_000_000))

    static let qr: FuzzTarget = FuzzTarget(
        name: "share-qr",
        summary: "PASSKEY-SHARE:/ URLs and their CBOR: a parsed code reprints to itself, and no map parses as both "
            + "a share code and a hybrid code",
        seeds: {
            guard let qrCode else { return [] }
            let hybrid =
                (try? QRCodePayload(
                    clientKey: handshakeKey, secret: secret, requestType: .getAssertion, timestamp: 1))?.url ?? ""
            return [
                Array(qrCode.url.utf8), Array(qrCode.url.lowercased().utf8), qrCode.cborBytes,
                Array(hybrid.utf8), Array(("PASSKEY-SHARE:/" + hybrid.dropFirst(6)).utf8),
                Array("PASSKEY-SHARE:/".utf8),
            ]
        },
        run: { input in
            let text = String(decoding: input, as: UTF8.self)
            for candidate in [try? ShareQRCode(url: text), try? ShareQRCode(cborBytes: input)] {
                guard let code = candidate else { continue }
                expect((try? ShareQRCode(url: code.url)) == code, "a share QR code changed in a round trip")
                expect((try? ShareQRCode(cborBytes: code.cborBytes)) == code, "a share QR map changed in a round trip")
                expect(code.hybridPayload.secret == code.secret, "the hybrid payload lost the secret")
                expect((try? QRCodePayload(cborBytes: code.cborBytes)) == nil, "a share map parsed as a hybrid one")
            }
            if let hybrid = try? QRCodePayload(cborBytes: input) {
                expect((try? ShareQRCode(cborBytes: hybrid.cborBytes)) == nil, "a hybrid map parsed as a share code")
            }
        })

    static let messages: FuzzTarget = FuzzTarget(
        name: "share-messages",
        summary: "the sender fed hostile requests, the receiver fed hostile answers: one share message at most, "
            + "and nothing opens that was not sealed to this session",
        seeds: {
            guard let qrCode, var sender = try? ShareSender(credential, to: qrCode, at: Date(timeIntervalSince1970: 0))
            else { return [] }
            let request = ShareRequestMessage.request(version: 1).bytes
            let offer = sender.answer(request, handshakeHash: handshakeHash)
            return [
                FuzzInput.chunks([request, ShareRequestMessage.acknowledge(.added).bytes, request]),
                [0xFF] + FuzzInput.chunks([offer, offer, [0x00]]),
                [0xFF] + FuzzInput.chunks([[0x00] + CBORValue.map([1: 1, 2: .bytes([4]), 3: .bytes([])]).encoded()]),
            ]
        },
        run: { input in
            guard let qrCode else { fatalError("fuzz invariant broken: the share QR code could not be made") }
            var chunks = FuzzInput(input)
            if input.first == 0xFF {
                _ = chunks.byte()
                receiverRun(&chunks, qrCode: qrCode)
            } else {
                senderRun(&chunks, qrCode: qrCode)
            }
        })

    /// Requests into a sender: parsed requests re-encode to themselves, and at most one answer is a share message.
    private static func senderRun(_ chunks: inout FuzzInput, qrCode: ShareQRCode) {
        guard var sender = try? ShareSender(credential, to: qrCode, at: Date(timeIntervalSince1970: 0)) else {
            fatalError("fuzz invariant broken: the sender could not be made")
        }
        var offers = 0
        var count = 0
        while count < 16, let chunk = chunks.chunk() {
            count += 1
            if let message = try? ShareRequestMessage(bytes: chunk) {
                expect((try? ShareRequestMessage(bytes: message.bytes)) == message, "a request changed in a round trip")
            }
            let answer = sender.answer(chunk, handshakeHash: handshakeHash)
            if answer.count > 1, (try? ShareOffer(response: answer)) != nil { offers += 1 }
            expect(offers <= 1, "the sender sent its passkey twice")
        }
    }

    /// Answers into a receiver: nothing opens (nothing here was sealed to its key for this session), except the
    /// one honest offer a seed carries, and never twice.
    private static func receiverRun(_ chunks: inout FuzzInput, qrCode: ShareQRCode) {
        guard
            var receiver = try? ShareReceiver(
                hybrid: QRCodePayload(publicKey: handshakeKey.publicKey, secret: secret, timestamp: 1_800_000_000),
                sealingKey: sealingKey)
        else { fatalError("fuzz invariant broken: the receiver could not be made") }
        expect(receiver.qrCode == qrCode, "the receiver shows another code")
        var opened = 0
        var count = 0
        while count < 8, let chunk = chunks.chunk() {
            count += 1
            if let offer = try? ShareOffer(response: chunk) {
                expect((try? ShareOffer(response: offer.response)) == offer, "a share message changed in a round trip")
            }
            if let passkey = try? receiver.open(chunk, handshakeHash: handshakeHash) {
                opened += 1
                expect(passkey.credential.id == credential.id, "a passkey opened that was never sealed")
            }
            expect(opened <= 1, "the receiver opened two share messages in one session")
            _ = try? ShareReceiver.checkAcknowledgementAnswer(chunk)
        }
    }
}
