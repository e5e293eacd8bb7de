import Basics
import CBOR
import Crypto
import Testing

@testable import Hybrid

/// The two caBLE handshakes, initiator against responder, against Python known answers, and every rejection.
struct NoiseTests {
    enum Kind: CaseIterable, Sendable {
        case qrInitiated, stateAssisted
    }

    /// The static key pair of one handshake and the initiator/responder kinds built from it.
    struct Statics {
        var kind: Kind
        var staticKey: P256.KeyAgreement.PrivateKey

        var initiator: HandshakeInitiator.Kind {
            switch kind {
            case .qrInitiated: .qrInitiated(qrKey: staticKey)
            case .stateAssisted: .stateAssisted(peerIdentity: staticKey.publicKey)
            }
        }

        var responder: HandshakeResponder.Kind {
            switch kind {
            case .qrInitiated: .qrInitiated(qrPublicKey: staticKey.publicKey)
            case .stateAssisted: .stateAssisted(identityKey: staticKey)
            }
        }
    }

    static func randomPSK() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test(arguments: Kind.allCases)
    func initiatorAndResponderAgree(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        #expect(message1.count == 81)
        #expect(message1.first == 0x04)

        let response = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init())
        #expect(response.message.count == 81)
        let message2 = response.message
        var authenticator = response.result.crypter
        let authenticatorHash = response.result.handshakeHash

        let result = try waiting.processResponse(message2)
        var client = result.crypter
        #expect(result.handshakeHash == authenticatorHash)
        #expect(result.handshakeHash.count == 32)

        // Client write = authenticator read and the reverse, keys and traffic both.
        #expect(client.keyBytesForTesting.write == authenticator.keyBytesForTesting.read)
        #expect(client.keyBytesForTesting.read == authenticator.keyBytesForTesting.write)
        #expect(client.keyBytesForTesting.read != client.keyBytesForTesting.write)

        for index in 0..<200 {
            let fromAuthenticator = Array("authenticator \(index)".utf8) + [UInt8](repeating: 7, count: index)
            let sealed = try authenticator.encrypt(fromAuthenticator)
            #expect(try client.decrypt(sealed) == fromAuthenticator)
            let fromClient = Array("client \(index)".utf8)
            #expect(try authenticator.decrypt(try client.encrypt(fromClient)) == fromClient)
        }
        #expect(client.writeSequenceNumber == 200 && client.readSequenceNumber == 200)
        #expect(authenticator.writeSequenceNumber == 200 && authenticator.readSequenceNumber == 200)
        #expect(client.readConstruction == .current && authenticator.readConstruction == .current)
    }

    @Test func knownAnswersFromPython() throws {
        let vectors = try NoiseVectors.handshakes()
        #expect(Set(vectors.compactMap { $0["kind"] as? String }) == ["qr_initiated", "state_assisted"])
        for vector in vectors {
            let kind: Kind = vector["kind"] as? String == "qr_initiated" ? .qrInitiated : .stateAssisted
            let statics = Statics(kind: kind, staticKey: try keyAgreementKey(try vector.hex("static_private_key")))
            #expect(statics.staticKey.publicKey.uncompressed == (try vector.hex("static_public_key")))
            let psk = try vector.hex("psk")
            let initiatorEphemeral = try keyAgreementKey(try vector.hex("initiator_ephemeral_private_key"))
            let responderEphemeral = try keyAgreementKey(try vector.hex("responder_ephemeral_private_key"))

            let (message1, waiting) = try HandshakeInitiator(
                kind: statics.initiator, psk: psk, ephemeralKey: initiatorEphemeral
            ).makeMessage()
            #expect(message1 == (try vector.hex("message1")))

            let response = try HandshakeResponder.respond(
                to: message1, kind: statics.responder, psk: psk, ephemeralKey: responderEphemeral)
            #expect(response.message == (try vector.hex("message2")))
            #expect(response.result.handshakeHash == (try vector.hex("handshake_hash")))
            var authenticator = response.result.crypter
            #expect(authenticator.keyBytesForTesting.read == (try vector.hex("k1")))
            #expect(authenticator.keyBytesForTesting.write == (try vector.hex("k2")))

            let result = try waiting.processResponse(try vector.hex("message2"))
            #expect(result.handshakeHash == (try vector.hex("handshake_hash")))
            var client = result.crypter
            #expect(client.keyBytesForTesting.write == (try vector.hex("k1")))
            #expect(client.keyBytesForTesting.read == (try vector.hex("k2")))

            let sample = Array(try #require(vector["sample_plaintext_utf8"] as? String).utf8)
            let clientFirst = try client.encrypt(sample)
            #expect(clientFirst == (try vector.hex("client_first_ciphertext")))
            let authenticatorFirst = try authenticator.encrypt(sample)
            #expect(authenticatorFirst == (try vector.hex("authenticator_first_ciphertext")))
            #expect(try authenticator.decrypt(clientFirst) == sample)
            #expect(try client.decrypt(authenticatorFirst) == sample)
        }
    }

    /// Both sides refuse every message whose length is not 81, before any cryptography.
    @Test(arguments: Kind.allCases)
    func wrongLengthsAreRefused(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        let message2 = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init()
        ).message
        for count in [0, 1, 64, 65, 80, 82, 97, 1000] {
            let truncatedOrExtended = Array((message1 + [UInt8](repeating: 0, count: 1000)).prefix(count))
            #expect(throws: NoiseError.wrongLength(count)) {
                _ = try HandshakeResponder.respond(
                    to: truncatedOrExtended, kind: statics.responder, psk: psk, ephemeralKey: .init())
            }
            let response = Array((message2 + [UInt8](repeating: 0, count: 1000)).prefix(count))
            #expect(throws: NoiseError.wrongLength(count)) { _ = try waiting.processResponse(response) }
        }
        // The untouched messages still work, so the refusals above are about length alone.
        _ = try waiting.processResponse(message2)
    }

    /// A correctly encrypted message with a one-byte payload (computed by the Python script) is 82 bytes long and
    /// is refused: caBLE handshake messages carry no payload.
    @Test func messagesWithAPayloadAreRefused() throws {
        for vector in try NoiseVectors.handshakes() {
            let kind: Kind = vector["kind"] as? String == "qr_initiated" ? .qrInitiated : .stateAssisted
            let statics = Statics(kind: kind, staticKey: try keyAgreementKey(try vector.hex("static_private_key")))
            let psk = try vector.hex("psk")
            let withPayload1 = try vector.hex("message1_with_payload_01")
            #expect(withPayload1.count == 82)
            #expect(throws: NoiseError.wrongLength(82)) {
                _ = try HandshakeResponder.respond(
                    to: withPayload1, kind: statics.responder, psk: psk, ephemeralKey: .init())
            }
            let (_, waiting) = try HandshakeInitiator(
                kind: statics.initiator, psk: psk,
                ephemeralKey: try keyAgreementKey(try vector.hex("initiator_ephemeral_private_key"))
            ).makeMessage()
            let withPayload2 = try vector.hex("message2_with_payload_01")
            #expect(withPayload2.count == 82)
            #expect(throws: NoiseError.wrongLength(82)) { _ = try waiting.processResponse(withPayload2) }
        }
    }

    /// Points that are not on the curve, or not in uncompressed form, are refused before ECDH.
    @Test(arguments: Kind.allCases)
    func invalidPointsAreRefused(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        let message2 = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init()
        ).message

        var offCurve = message1
        offCurve[64] ^= 1  // last byte of y: (x, y') is not on the curve
        var compressedPrefix = message1
        compressedPrefix[0] = 0x02
        var hybridPrefix = message1
        hybridPrefix[0] = 0x06
        let allZero = [UInt8](repeating: 0, count: 65) + message1[65...]
        let xTooLarge = [0x04] + [UInt8](repeating: 0xFF, count: 64) + message1[65...]
        for bad in [offCurve, compressedPrefix, hybridPrefix, allZero, xTooLarge] {
            #expect(throws: NoiseError.invalidPoint) {
                _ = try HandshakeResponder.respond(to: bad, kind: statics.responder, psk: psk, ephemeralKey: .init())
            }
            let badResponse = Array(bad[..<65]) + message2[65...]
            #expect(throws: NoiseError.invalidPoint) { _ = try waiting.processResponse(badResponse) }
        }
    }

    /// Every single-bit flip of the tag fails authentication, on both sides.
    @Test(arguments: Kind.allCases)
    func flippedTagBitsAreRefused(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        let message2 = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init()
        ).message
        for bit in stride(from: 65 * 8, to: 81 * 8, by: 5) {
            #expect(throws: NoiseError.authenticationFailed) {
                _ = try HandshakeResponder.respond(
                    to: flipping(message1, bit: bit), kind: statics.responder, psk: psk, ephemeralKey: .init())
            }
            #expect(throws: NoiseError.authenticationFailed) {
                _ = try waiting.processResponse(flipping(message2, bit: bit))
            }
        }
    }

    /// A different PSK on either side fails the tag of the message that side reads.
    @Test(arguments: Kind.allCases)
    func wrongPSKIsRefused(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        var otherPSK = psk
        otherPSK[31] ^= 0x80
        let (message1, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        #expect(throws: NoiseError.authenticationFailed) {
            _ = try HandshakeResponder.respond(
                to: message1, kind: statics.responder, psk: otherPSK, ephemeralKey: .init())
        }
        // An initiator with another PSK cannot read a genuine responder's message 2.
        let (otherMessage1, otherWaiting) = try HandshakeInitiator(
            kind: statics.initiator, psk: otherPSK, ephemeralKey: .init()
        ).makeMessage()
        _ = otherMessage1
        let message2 = try HandshakeResponder.respond(
            to: message1, kind: statics.responder, psk: psk, ephemeralKey: .init()
        ).message
        #expect(throws: NoiseError.authenticationFailed) { _ = try otherWaiting.processResponse(message2) }
        _ = try waiting.processResponse(message2)
    }

    /// The static key must match: another QR key (KN) or another identity key (NK) fails authentication.
    @Test(arguments: Kind.allCases)
    func wrongStaticKeyIsRefused(kind: Kind) throws {
        let statics = Statics(kind: kind, staticKey: .init())
        let impostor = Statics(kind: kind, staticKey: .init())
        let psk = Self.randomPSK()
        let (message1, _) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        #expect(throws: NoiseError.authenticationFailed) {
            _ = try HandshakeResponder.respond(to: message1, kind: impostor.responder, psk: psk, ephemeralKey: .init())
        }
        // The other direction: a responder that expects the impostor's QR key (or holds its identity key)
        // answers a client that started with the impostor's key; the client holding the real key cannot finish.
        let (impostorMessage1, _) = try HandshakeInitiator(kind: impostor.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        let impostorMessage2 = try HandshakeResponder.respond(
            to: impostorMessage1, kind: impostor.responder, psk: psk, ephemeralKey: .init()
        ).message
        let (_, waiting) = try HandshakeInitiator(kind: statics.initiator, psk: psk, ephemeralKey: .init())
            .makeMessage()
        #expect(throws: NoiseError.authenticationFailed) { _ = try waiting.processResponse(impostorMessage2) }
    }

    @Test func pskMustBe32Bytes() throws {
        let key = P256.KeyAgreement.PrivateKey()
        for count in [0, 16, 31, 33] {
            let psk = [UInt8](repeating: 1, count: count)
            #expect(throws: NoiseError.wrongPSKLength(count)) {
                _ = try HandshakeInitiator(kind: .qrInitiated(qrKey: key), psk: psk, ephemeralKey: .init())
            }
            #expect(throws: NoiseError.wrongPSKLength(count)) {
                _ = try HandshakeResponder.respond(
                    to: [], kind: .stateAssisted(identityKey: key), psk: psk, ephemeralKey: .init())
            }
        }
    }

    @Test func descriptionsHoldNoKeys() throws {
        let qrKey = P256.KeyAgreement.PrivateKey()
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let psk = [UInt8](repeating: 0xA5, count: 32)
        let initiator = try HandshakeInitiator(kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: ephemeral)
        let text = String(describing: initiator)
        #expect(text == "HandshakeInitiator(Noise_KNpsk0_P256_AESGCM_SHA256)")
        let secrets = [qrKey, ephemeral].map { Array($0.rawRepresentation).hexString } + [psk.hexString]
        var dumped = ""
        dump(initiator, to: &dumped)
        let (_, waiting) = try initiator.makeMessage()
        #expect(String(describing: waiting) == "HandshakeInitiatorWaiting")
        dump(waiting, to: &dumped)
        #expect(dumped.contains("Noise_KNpsk0"))
        #expect(Mirror(reflecting: initiator).children.map(\.label) == ["protocol"])
        #expect(Mirror(reflecting: waiting).children.isEmpty)
        for secret in secrets {
            #expect(!dumped.contains(secret) && !text.contains(secret))
        }
        for error in [NoiseError.wrongLength(80), .invalidPoint, .authenticationFailed, .wrongPSKLength(3)] {
            #expect(!String(describing: error).contains(Array(qrKey.rawRepresentation).hexString))
        }
    }
}
