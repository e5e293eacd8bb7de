import CBOR
import Crypto
import Hybrid

/// The hybrid transport's inputs: the QR code, the BLE advert, the Noise handshake and the tunnel.
enum HybridTargets {
    /// Fixed keys: every run, and every reproducer, sees the same handshake.
    private static let keys = SeededBytes(seed: 2)
    private static let qrKey = keys.keyAgreementKey()
    private static let clientEphemeral = keys.keyAgreementKey()
    private static let phoneEphemeral = keys.keyAgreementKey()
    private static let identityKey = keys.keyAgreementKey()
    private static let qrSecret = keys.bytes(QRCodePayload.secretByteCount)
    private static let psk = keys.bytes(32)

    // MARK: QR code

    static let qrURL: FuzzTarget = FuzzTarget(
        name: "qr-url",
        summary: "FIDO:/ URLs and their CBOR: a parsed code prints as a URL that parses to the same code",
        seeds: {
            var seeds: [[UInt8]] = []
            for type in [HybridRequestType.getAssertion, .makeCredential, HybridRequestType(rawValue: "dcp")] {
                if let payload = try? QRCodePayload(
                    clientKey: qrKey, secret: qrSecret, requestType: type, timestamp: 1_800_000_000)
                {
                    seeds.append(Array(payload.url.utf8))
                }
            }
            return seeds + [Array("fido:/0123456789".utf8), Array("FIDO:/".utf8)]
        },
        run: { input in
            let text = String(decoding: input, as: UTF8.self)
            for candidate in [try? QRCodePayload(url: text), try? QRCodePayload(cborBytes: input)] {
                guard let payload = candidate else { continue }
                // Printing fills in key 4 (false when absent); from then on a round trip changes nothing.
                guard let printed = try? QRCodePayload(url: payload.url) else {
                    fatalError("fuzz invariant broken: a parsed QR code printed a URL that does not parse")
                }
                expect(
                    printed.secret == payload.secret && printed.compressedPublicKey == payload.compressedPublicKey
                        && printed.requestType == payload.requestType && printed.timestamp == payload.timestamp
                        && printed.knownDomainCount == payload.knownDomainCount,
                    "a QR code changed in a round trip")
                expect((try? QRCodePayload(url: printed.url)) == printed, "printing a QR code twice differs")
            }
        })

    // MARK: Advert

    private static let eidKey = KeyDerivation.eidKey(qrSecret: qrSecret)

    static let advert: FuzzTarget = FuzzTarget(
        name: "advert",
        summary: "BLE advertising data, the caBLE service data and its decryption: round trips are exact",
        seeds: {
            var seeds: [[UInt8]] = []
            if let routingID = try? RoutingID(bytes: [1, 2, 3]),
                let plaintext = try? AdvertPlaintext(
                    nonce: [UInt8](repeating: 7, count: AdvertPlaintext.nonceByteCount), routingID: routingID,
                    domain: .google),
                let data = try? AdvertisingData.caBLE(advert: eidKey.encrypt(plaintext))
            {
                seeds.append(data.bytes)
                seeds.append(eidKey.encrypt(plaintext))
                seeds.append(plaintext.bytes)
            }
            return seeds
        },
        run: { input in
            if let data = try? AdvertisingData(bytes: input) {
                expect((try? AdvertisingData(bytes: data.bytes)) == data, "advertising data changed in a round trip")
                if let serviceData = data.caBLEAdvert { _ = try? eidKey.decrypt(serviceData) }
            }
            if let plaintext = try? eidKey.decrypt(input) {
                expect((try? eidKey.decrypt(eidKey.encrypt(plaintext))) == plaintext, "an advert did not round-trip")
            }
            if let plaintext = try? AdvertPlaintext(bytes: input) {
                expect(plaintext.bytes == input, "an advert plaintext did not re-encode to its bytes")
            }
        })

    // MARK: Noise

    /// Message 2 from a hostile phone, to a client that sent message 1 (both handshakes; the first byte chooses).
    static let noiseInitiator: FuzzTarget = FuzzTarget(
        name: "noise-initiator",
        summary: "Noise message 2 to the client (KNpsk0 and NKpsk0): refused or a working channel, never a crash",
        seeds: {
            [false, true].compactMap { stateAssisted in
                guard
                    let first = try? HandshakeInitiator(
                        kind: initiatorKind(stateAssisted), psk: psk, ephemeralKey: clientEphemeral
                    ).makeMessage().message,
                    let response = try? HandshakeResponder.respond(
                        to: first, kind: responderKind(stateAssisted), psk: psk, ephemeralKey: phoneEphemeral)
                else { return nil }
                return [stateAssisted ? 1 : 0] + response.message
            }
        },
        run: { input in
            var input = FuzzInput(input)
            let stateAssisted = (input.byte() ?? 0) & 1 == 1
            guard
                let waiting = try? HandshakeInitiator(
                    kind: initiatorKind(stateAssisted), psk: psk, ephemeralKey: clientEphemeral
                ).makeMessage().waiting
            else { fatalError("fuzz invariant broken: message 1 could not be made") }
            guard var result = try? waiting.processResponse(input.rest()) else { return }
            expect(result.handshakeHash.count == 32, "a handshake hash of \(result.handshakeHash.count) bytes")
            expect((try? result.crypter.encrypt([1, 2, 3])) != nil, "an accepted handshake cannot encrypt")
        })

    /// Message 1 from a hostile client, to a phone (both handshakes; the first byte chooses).
    static let noiseResponder: FuzzTarget = FuzzTarget(
        name: "noise-responder",
        summary: "Noise message 1 to the phone (KNpsk0 and NKpsk0): refused or answered with 81 bytes",
        seeds: {
            [false, true].compactMap { stateAssisted in
                (try? HandshakeInitiator(
                    kind: initiatorKind(stateAssisted), psk: psk, ephemeralKey: clientEphemeral
                ).makeMessage().message).map { [stateAssisted ? 1 : 0] + $0 }
            }
        },
        run: { input in
            var input = FuzzInput(input)
            let stateAssisted = (input.byte() ?? 0) & 1 == 1
            guard
                let response = try? HandshakeResponder.respond(
                    to: input.rest(), kind: responderKind(stateAssisted), psk: psk, ephemeralKey: phoneEphemeral)
            else { return }
            expect(response.message.count == 81, "message 2 of \(response.message.count) bytes")
        })

    private static func initiatorKind(_ stateAssisted: Bool) -> HandshakeInitiator.Kind {
        stateAssisted ? .stateAssisted(peerIdentity: identityKey.publicKey) : .qrInitiated(qrKey: qrKey)
    }

    private static func responderKind(_ stateAssisted: Bool) -> HandshakeResponder.Kind {
        stateAssisted ? .stateAssisted(identityKey: identityKey) : .qrInitiated(qrPublicKey: qrKey.publicKey)
    }

    // MARK: Tunnel messages

    /// Decrypted tunnel plaintexts: the first byte picks the revision, the rest is parsed every way it can be.
    static let tunnelFrames: FuzzTarget = FuzzTarget(
        name: "tunnel-frames",
        summary: "tunnel frames, the post-handshake message, updates and padded CBOR: accepted input round-trips",
        seeds: {
            let getInfo = CBORValue.map([1: ["FIDO_2_0", "FIDO_2_1"], 3: .bytes([UInt8](repeating: 0, count: 16))])
                .encoded()
            let message = PostHandshakeMessage(getInfo: getInfo, features: [HybridFeature(rawValue: "ctap")])
            let frames = [
                TunnelFrame(type: .ctap, payload: [0x04]),
                TunnelFrame(type: .shutdown, payload: []),
                TunnelFrame(type: .update, payload: CBORValue.map([2: "padding"]).encoded()),
            ]
            return [ProtocolRevision.zero, .one].flatMap { (revision: ProtocolRevision) -> [[UInt8]] in
                let marker: UInt8 = revision == .zero ? 0 : 1
                var seeds: [[UInt8]] = [[marker] + message.plaintext(revision: revision)]
                for frame in frames {
                    if let plaintext = try? frame.plaintext(revision: revision) { seeds.append([marker] + plaintext) }
                }
                return seeds
            }
        },
        run: { input in
            var input = FuzzInput(input)
            let revision: ProtocolRevision = (input.byte() ?? 0) & 1 == 0 ? .zero : .one
            let plaintext = input.rest()
            if let frame = try? TunnelFrame(plaintext: plaintext, revision: revision) {
                expect(
                    (try? frame.plaintext(revision: revision)).flatMap {
                        try? TunnelFrame(plaintext: $0, revision: revision)
                    } == frame, "a tunnel frame did not round-trip")
                if frame.type == .update, let update = try? UpdateMessage(payload: frame.payload) {
                    _ = update.linking?.name
                }
            }
            if let (message, parsedRevision) = try? PostHandshakeMessage.parse(plaintext) {
                let again = try? PostHandshakeMessage.parse(message.plaintext(revision: parsedRevision))
                expect(again?.message == message, "a post-handshake message did not round-trip")
                expect(again?.revision == parsedRevision, "a post-handshake message changed revision")
            }
            if let value = try? PaddedCBOR.decode(plaintext) {
                expect((try? PaddedCBOR.decode(PaddedCBOR.encode(value))) == value, "padded CBOR did not round-trip")
            }
        })

    /// Linking information as CBOR (the map inside the post-handshake and update messages).
    static let linking: FuzzTarget = FuzzTarget(
        name: "linking",
        summary: "linking information maps: accepted maps re-encode to maps that parse to the same value",
        seeds: {
            guard
                let info = try? LinkingInfo(
                    contactID: [UInt8](repeating: 0xC0, count: 40), linkID: [UInt8](repeating: 1, count: 8),
                    linkSecret: [UInt8](repeating: 2, count: 32), identityKey: identityKey, name: "Pixel",
                    clientQRPublicKey: qrKey.publicKey, handshakeHash: [UInt8](repeating: 3, count: 32))
            else { return [] }
            var fromPlay = info
            fromPlay.isFromPlayServices = true
            return [info.cborValue.encoded(), fromPlay.cborValue.encoded()]
        },
        run: { input in
            guard let value = try? CBORDecoder(requiresCanonicalForm: false).decode(input),
                let info = try? LinkingInfo(cbor: value)
            else { return }
            expect((try? LinkingInfo(cbor: info.cborValue)) == info, "linking information did not round-trip")
            _ = try? info.verifySignature(qrKey: qrKey, handshakeHash: [UInt8](repeating: 3, count: 32))
        })

    // MARK: The client session after the handshake

    /// A client session that has completed an honest handshake; then every chunk of the input is encrypted
    /// under the phone's keys and delivered, as a hostile phone would, before and after the session closes (a
    /// phone that goes on after its shutdown, or after the client gave up). A chunk that starts with 0xFF instead
    /// makes the client send a CTAP request first, so that responses are expected.
    static let clientSession: FuzzTarget = FuzzTarget(
        name: "client-session",
        summary: "the client's hybrid session fed encrypted post-handshake messages and frames by a hostile phone",
        seeds: {
            let getInfo = CBORValue.map([1: ["FIDO_2_1"], 3: .bytes([UInt8](repeating: 0, count: 16))]).encoded()
            let postHandshake = PostHandshakeMessage(getInfo: getInfo).plaintext(revision: .one)
            let response = (try? TunnelFrame(type: .ctap, payload: [0, 0xA0]).plaintext(revision: .one)) ?? []
            let shutdown = (try? TunnelFrame(type: .shutdown, payload: []).plaintext(revision: .one)) ?? []
            return [
                FuzzInput.chunks([postHandshake, [0xFF, 0x04], response, shutdown]),
                FuzzInput.chunks([PostHandshakeMessage(getInfo: getInfo).plaintext(revision: .zero), [0xFF, 4]]),
                FuzzInput.chunks([postHandshake, [0xFF, 0x04], shutdown, response, [0xFF, 0x04], postHandshake]),
            ]
        },
        run: { input in
            let secret = qrSecret
            guard
                var session = try? HybridClientSession(
                    qrKey: qrKey, secret: secret, ephemeralKey: clientEphemeral, requestType: .getAssertion,
                    timestamp: 1_800_000_000),
                let routingID = try? RoutingID(bytes: [1, 2, 3]),
                let plaintext = try? AdvertPlaintext(
                    nonce: [UInt8](repeating: 7, count: AdvertPlaintext.nonceByteCount), routingID: routingID,
                    domain: .google)
            else { fatalError("fuzz invariant broken: the session could not be set up") }
            _ = session.start()
            _ = session.advertReceived(eidKey.encrypt(plaintext))
            guard case .send(let first)? = session.tunnelConnected().first,
                var phone = try? HandshakeResponder.respond(
                    to: first, kind: .qrInitiated(qrPublicKey: qrKey.publicKey),
                    psk: KeyDerivation.psk(secret: secret, advert: plaintext), ephemeralKey: phoneEphemeral)
            else { fatalError("fuzz invariant broken: the honest handshake failed") }
            expect(session.received(phone.message).isEmpty, "the client acted on message 2")

            var chunks = FuzzInput(input)
            var count = 0
            var requestSent = false
            while count < 32, let chunk = chunks.chunk() {
                count += 1
                let closed = session.phase == .closed
                if chunk.first == 0xFF {
                    let actions = session.sendCTAP(Array(chunk.dropFirst()))
                    let sent = actions.contains { if case .send = $0 { true } else { false } }
                    expect(!(closed && sent), "a closed session sent a request")
                    requestSent = requestSent || sent
                    continue
                }
                guard let ciphertext = try? phone.result.crypter.encrypt(chunk) else { return }
                let actions = session.received(ciphertext)
                expect(!closed || actions.isEmpty, "a closed session acted on a message: \(actions)")
                for action in actions {
                    switch action {
                    case .ready:
                        expect(session.phase == .ready, "ready announced in phase \(session.phase)")
                    case .deliverCTAPResponse:
                        expect(requestSent, "a CTAP response delivered although no request was sent")
                        requestSent = false
                    default:
                        break
                    }
                }
            }
        })
}
