import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Hybrid
import Testing

/// Linked (state-assisted) hybrid: the phone offers linking information in a QR session, the client keeps it, and a
/// later session runs from it without a QR code (contact request, the link's advert keys, NKpsk0). Both roles run
/// against each other in memory.
extension HybridClientSession {
    /// The QR code of a QR-initiated session.
    func requireQRCode() throws -> QRCodePayload {
        guard let qrCode else { throw QRCodeError.missingPrefix }
        return qrCode
    }
}

struct LinkedSessionTests {
    static let relay = try! TunnelServerBaseURL(string: "ws://127.0.0.1:8080")
    static func random(_ count: Int) -> [UInt8] { AuthenticatorEnvironment.systemRandomBytes(count) }

    /// A QR session in which the client offers linking and the phone sends `offer`; returns what the client got.
    static func linkByQR(offer: LinkingOffer, clientOffersLinking: Bool = true) throws -> LinkingInfo? {
        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: random(16), ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 1_800_000_000, tunnelServer: relay,
            offersLinking: clientOffersLinking)
        _ = client.start()
        let qrCode = try client.requireQRCode()
        #expect(qrCode.stateAssisted == clientOffersLinking)
        var phone = try HybridAuthenticatorSession(
            qrCode: try QRCodePayload(url: qrCode.url), getInfo: [0xA0], ephemeralKey: P256.KeyAgreement.PrivateKey(),
            advertNonce: random(10), tunnelServer: relay, linkingOffer: offer)
        _ = phone.start()
        guard case .advertise(let advert) = phone.tunnelConnected(routingID: try RoutingID(bytes: [1, 2, 3])).first
        else { throw HybridSessionError.tunnelClosed }
        _ = client.advertReceived(advert)
        guard case .send(let message1) = client.tunnelConnected().first else { throw HybridSessionError.tunnelClosed }
        let answer = phone.received(message1)
        guard case .send(let message2) = answer[1], case .send(let postHandshake) = answer[2] else {
            throw HybridSessionError.tunnelClosed
        }
        #expect(phone.sentLinking == clientOffersLinking)
        #expect(client.received(message2).isEmpty)
        let ready = client.received(postHandshake)
        guard case .ready(_, let linking) = ready.last else {
            Issue.record("not ready: \(ready)")
            throw HybridSessionError.tunnelClosed
        }
        return linking
    }

    static func offer(identityKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey()) -> LinkingOffer {
        LinkingOffer(
            contactID: [0xAB, 0xCD, 0xEF] + random(29), linkID: random(8), linkSecret: random(32),
            identityKey: identityKey, name: "a phone")
    }

    @Test func theQRSessionCarriesVerifiedLinkingInformationOnlyWhenOffered() throws {
        let offer = Self.offer()
        let linking = try #require(try Self.linkByQR(offer: offer))
        #expect(linking.contactID == offer.contactID && linking.linkID == offer.linkID)
        #expect(linking.linkSecret == offer.linkSecret && linking.name == "a phone")
        #expect(linking.authenticatorPublicKey == offer.identityKey.publicKey.x963Representation.map { $0 })
        // A client that cannot store links (QR key 4 false) is offered nothing.
        #expect(try Self.linkByQR(offer: offer, clientOffersLinking: false) == nil)
    }

    /// A linked pair after the wake: returns the client's and the phone's sessions and what each did.
    struct Linked: ~Copyable {
        var client: HybridClientSession
        var phone: HybridAuthenticatorSession
        var advert: [UInt8]
    }

    static func wake(
        link: LinkingInfo, phoneSecret: [UInt8], identityKey: P256.KeyAgreement.PrivateKey, nonce: [UInt8]
    ) throws -> Linked {
        var client = try HybridClientSession(
            link: link, clientNonce: nonce, ephemeralKey: P256.KeyAgreement.PrivateKey(), requestType: .getAssertion,
            endpoint: .override(relay))
        #expect(client.qrCode == nil)
        let contactURL = "ws://127.0.0.1:8080/cable/contact/\(link.contactID.base64URLEncodedString)"
        let payload = try ClientPayload(linkID: link.linkID, clientNonce: nonce, requestType: .getAssertion)
        #expect(
            client.start() == [
                .report(.contacting(url: contactURL)), .contact(url: contactURL, clientPayload: payload.headerValue),
            ])
        #expect(client.phase == .contacting)
        #expect(
            client.tunnelConnected() == [
                .report(.tunnelConnected(url: contactURL)), .startScanning, .armTimer(.seconds(120)),
            ])
        #expect(client.phase == .awaitingAdvert)

        // The relay wakes the phone with its routing ID, a tunnel ID and the client payload, unchanged.
        let routingID = try RoutingID(bytes: [9, 8, 7])
        let tunnelID = try TunnelID(bytes: random(16))
        var phone = try HybridAuthenticatorSession(
            linkedWake: routingID, tunnelID: tunnelID, clientPayload: try ClientPayload(cbor: payload.cbor),
            linkSecret: phoneSecret, identityKey: identityKey, getInfo: [0xA0],
            ephemeralKey: P256.KeyAgreement.PrivateKey(), advertRandom: random(15), tunnelServer: relay)
        let connectURL = "ws://127.0.0.1:8080/cable/connect/090807/\(tunnelID.hex)"
        #expect(phone.start() == [.report(.connecting(url: connectURL)), .connect(url: connectURL)])
        let advertising = phone.tunnelConnected(routingIDHeader: nil)
        guard case .advertise(let advert) = advertising.first else {
            Issue.record("no advert: \(advertising)")
            throw HybridSessionError.tunnelClosed
        }
        return Linked(client: client, phone: phone, advert: advert)
    }

    @Test func aLinkedSessionRunsWithoutAQRCode() async throws {
        let identityKey = P256.KeyAgreement.PrivateKey()
        let offer = Self.offer(identityKey: identityKey)
        let link = try #require(try Self.linkByQR(offer: offer))
        let nonce = Self.random(16)
        var pair = try Self.wake(link: link, phoneSecret: offer.linkSecret, identityKey: identityKey, nonce: nonce)

        // The advert decrypts with the link's keys for this nonce, and its domain bytes pass Chromium's check.
        let plaintext = try KeyDerivation.eidKey(linkSecret: link.linkSecret, clientNonce: nonce).decrypt(pair.advert)
        #expect(plaintext.bytes[0] == 0)
        #expect(pair.client.advertReceived(Self.random(20)).isEmpty)
        let hello = pair.client.advertReceived(pair.advert)
        guard hello.count == 5, case .send(let message1) = hello[3] else {
            Issue.record("unexpected \(hello)")
            return
        }
        #expect(Array(hello.prefix(3)) == [.stopScanning, .cancelTimer, .report(.linkedPhoneNear)])
        #expect(hello[4] == .armTimer(.seconds(120)))
        let answer = pair.phone.received(message1)
        guard answer.count == 5, case .send(let message2) = answer[1], case .send(let postHandshake) = answer[2] else {
            Issue.record("unexpected \(answer)")
            return
        }
        #expect(pair.phone.sentLinking == false)
        #expect(pair.client.received(message2).isEmpty)
        #expect(pair.client.received(postHandshake).last == .ready(getInfo: [0xA0], linking: nil))

        // CTAP goes through both ways.
        let sending = pair.client.sendCTAP([0x04])
        guard case .send(let request) = sending.first else {
            Issue.record("the request is not sent: \(sending)")
            return
        }
        #expect(pair.phone.received(request).last == .deliverCTAPRequest([0x04]))
        let answering = pair.phone.ctapResponse([0x00, 0xA0])
        guard case .send(let response) = answering.first else {
            Issue.record("the response is not sent: \(answering)")
            return
        }
        #expect(pair.client.received(response).last == .deliverCTAPResponse([0x00, 0xA0]))
    }

    @Test func aWrongLinkSecretMatchesNoAdvertAndSendsNothing() throws {
        let identityKey = P256.KeyAgreement.PrivateKey()
        let offer = Self.offer(identityKey: identityKey)
        var link = try #require(try Self.linkByQR(offer: offer))
        link.linkSecret = Self.random(32)
        var pair = try Self.wake(
            link: link, phoneSecret: offer.linkSecret, identityKey: identityKey, nonce: Self.random(16))
        #expect(pair.client.advertReceived(pair.advert).isEmpty)
        #expect(pair.client.phase == .awaitingAdvert)
        let expired = pair.client.timerExpired()
        #expect(expired == [.stopScanning, .close(.linkedPhoneNotNear(timeout: .seconds(120)))])
        #expect(!expired.contains { if case .send = $0 { true } else { false } })
    }

    @Test func anotherIdentityKeyFailsTheHandshakeAtThePhone() throws {
        let identityKey = P256.KeyAgreement.PrivateKey()
        let offer = Self.offer(identityKey: identityKey)
        let link = try #require(try Self.linkByQR(offer: offer))
        // The phone answers with another identity key (a different phone, or a tampered link).
        var pair = try Self.wake(
            link: link, phoneSecret: offer.linkSecret, identityKey: P256.KeyAgreement.PrivateKey(),
            nonce: Self.random(16))
        let hello = pair.client.advertReceived(pair.advert)
        guard hello.count > 3, case .send(let message1) = hello[3] else {
            Issue.record("no handshake message: \(hello)")
            return
        }
        let answer = pair.phone.received(message1)
        #expect(answer == [.stopAdvertising, .close(.handshake(.authenticationFailed))])
        #expect(pair.phone.phase == .closed)
    }

    @Test func unusableLinksAreRefusedBeforeAnythingHappens() throws {
        var link = try #require(try Self.linkByQR(offer: Self.offer()))
        #expect(throws: LinkedSessionError.clientPayload(.invalidField(2))) {
            _ = try HybridClientSession(
                link: link, clientNonce: Self.random(15), ephemeralKey: P256.KeyAgreement.PrivateKey(),
                requestType: .getAssertion, endpoint: .override(Self.relay))
        }
        link.contactID = []
        #expect(throws: LinkedSessionError.linking(.invalidField(1))) {
            _ = try HybridClientSession(
                link: link, clientNonce: Self.random(16), ephemeralKey: P256.KeyAgreement.PrivateKey(),
                requestType: .getAssertion, endpoint: .override(Self.relay))
        }
    }

    @Test func theLinkedAdvertKeepsItsDomainBytesValid() throws {
        // Random bytes 14–15 in 2…255 would be dropped by Chromium's check; the phone moves them to 256 and up.
        for low in [UInt8(2), 100, 255] {
            let random = [UInt8](repeating: 7, count: 13) + [low, 0]
            var phone = try HybridAuthenticatorSession(
                linkedWake: try RoutingID(bytes: [1, 1, 1]), tunnelID: try TunnelID(bytes: Self.random(16)),
                clientPayload: try ClientPayload(
                    linkID: Self.random(8), clientNonce: Self.random(16), requestType: .getAssertion),
                linkSecret: Self.random(32), identityKey: P256.KeyAgreement.PrivateKey(), getInfo: [0xA0],
                ephemeralKey: P256.KeyAgreement.PrivateKey(), advertRandom: random, tunnelServer: Self.relay)
            _ = phone.start()
            guard case .advertise = phone.tunnelConnected(routingIDHeader: nil).first else {
                Issue.record("no advert for \(low)")
                return
            }
        }
    }
}

/// The client payload and the wake channel's messages and ownership proofs.
struct WakeChannelProtocolTests {
    static func random(_ count: Int) -> [UInt8] { AuthenticatorEnvironment.systemRandomBytes(count) }

    @Test func theClientPayloadRoundTripsAndRefusesWhatChromiumWouldNotSend() throws {
        let payload = try ClientPayload(
            linkID: [1, 2, 3, 4, 5, 6, 7, 8], clientNonce: .init(repeating: 9, count: 16),
            requestType: .makeCredential)
        #expect(payload.headerValue == payload.cbor.upperHexString)
        #expect(try ClientPayload(headerValue: payload.headerValue) == payload)
        #expect(try ClientPayload(headerValue: payload.headerValue.lowercased()) == payload)
        #expect(
            payload.cbor
                == CBORValue.map([
                    1: .bytes([1, 2, 3, 4, 5, 6, 7, 8]), 2: .bytes(.init(repeating: 9, count: 16)), 3: "mc",
                ]).encoded())
        #expect(!payload.description.contains("0909"))

        let cases: [(String, ClientPayloadError)] = [
            ("A", .notHex), ("ZZ", .notHex), ("", .invalidCBOR(.unexpectedEnd)),
            (CBORValue.array([]).encoded().hexString, .notAMap),
            (CBORValue.map([2: .bytes(Self.random(16)), 3: "ga"]).encoded().hexString, .missingKey(1)),
            (
                CBORValue.map([1: .bytes(Self.random(7)), 2: .bytes(Self.random(16)), 3: "ga"]).encoded().hexString,
                .invalidField(1)
            ),
            (
                CBORValue.map([1: .bytes(Self.random(8)), 2: .bytes(Self.random(15)), 3: "ga"]).encoded().hexString,
                .invalidField(2)
            ),
            (
                CBORValue.map([1: .bytes(Self.random(8)), 2: .bytes(Self.random(16)), 3: 1]).encoded().hexString,
                .invalidField(3)
            ),
            (String(repeating: "00", count: 600), .tooLong(1200)),
        ]
        for (header, expected) in cases {
            #expect(throws: expected) { _ = try ClientPayload(headerValue: header) }
        }
    }

    @Test func listenerMessagesRoundTripAndAreChecked() throws {
        let contactID = Self.random(32)
        let messages: [ListenerMessage] = [
            .challenge(Self.random(32), heartbeatSeconds: 30), .register(verifier: Self.random(32)),
            .registered(contactID: contactID), .listen(contactID: contactID, proof: Self.random(32)), .listening,
            .revoke(contactID: contactID, proof: Self.random(32)),
            .wake(
                routingID: try RoutingID(bytes: [1, 2, 3]), tunnelID: try TunnelID(bytes: Self.random(16)),
                clientPayload: Self.random(38)),
            .heartbeat, .revoked, .declined(tunnelID: try TunnelID(bytes: Self.random(16))),
        ]
        for message in messages {
            #expect(try ListenerMessage(bytes: message.bytes) == message)
            #expect(!message.description.contains(contactID.hexString))
        }
        #expect(throws: ListenerMessageError.unknownType(11)) {
            _ = try ListenerMessage(bytes: CBORValue.map([0: 11]).encoded())
        }
        #expect(throws: ListenerMessageError.missingType) {
            _ = try ListenerMessage(bytes: CBORValue.map([1: 1]).encoded())
        }
        #expect(throws: ListenerMessageError.invalidField(3)) {
            _ = try ListenerMessage(
                bytes: CBORValue.map([0: 4, 3: .bytes(Self.random(31)), 8: .bytes(Self.random(32))]).encoded())
        }
        #expect(throws: ListenerMessageError.missingKey(8)) {
            _ = try ListenerMessage(bytes: CBORValue.map([0: 4, 3: .bytes(contactID)]).encoded())
        }
        #expect(throws: ListenerMessageError.invalidField(2)) {
            _ = try ListenerMessage(bytes: CBORValue.map([0: 1, 1: .bytes(Self.random(32)), 2: 0]).encoded())
        }
        #expect(throws: ListenerMessageError.invalidField(0)) { _ = try ListenerMessage(bytes: Self.random(3000)) }
    }

    @Test func listenerPathsNameTheInstanceThatIssuedTheContact() throws {
        let contactID: [UInt8] = [0x00, 0x01, 0x2C] + Self.random(29)
        #expect(ListenerPath(contactID: contactID).path == "/cable/listen/00012C")
        #expect(ListenerPath(contactID: Self.random(31)).path == "/cable/listen")
        #expect(ListenerPath().path == ListenerPath.registration)
        #expect(try ListenerPath(path: "/cable/listen") == ListenerPath())
        #expect(try ListenerPath(path: "/cable/listen/00012c").routingID == RoutingID(bytes: [0x00, 0x01, 0x2C]))
        for path in ["/cable/listen/", "/cable/listen/00012", "/cable/listen/00012G", "/cable/listen/00012C/x"] {
            #expect(throws: TunnelPathError.invalidRoutingID) { _ = try ListenerPath(path: path) }
        }
        for path in ["/cable/listenx", "/cable/listen?x=1", "/cable/new/00", "", "/cable"] {
            #expect(throws: TunnelPathError.unknownPath) { _ = try ListenerPath(path: path) }
        }
    }

    @Test func ownershipProofsBindTheChallengeAndTheContactID() {
        let secret = Self.random(32)
        let verifier = ContactOwnership.verifier(listenerSecret: secret)
        #expect(verifier != ContactOwnership.verifier(listenerSecret: Self.random(32)))
        let contactID = Self.random(32)
        let challenge = Self.random(32)
        let proof = ContactOwnership.proof(verifier: verifier, challenge: challenge, contactID: contactID)
        #expect(ContactOwnership.verify(proof: proof, verifier: verifier, challenge: challenge, contactID: contactID))
        #expect(
            !ContactOwnership.verify(proof: proof, verifier: verifier, challenge: Self.random(32), contactID: contactID)
        )
        #expect(
            !ContactOwnership.verify(proof: proof, verifier: verifier, challenge: challenge, contactID: Self.random(32))
        )
        #expect(
            !ContactOwnership.verify(
                proof: Array(proof.prefix(31)), verifier: verifier, challenge: challenge, contactID: contactID))

        // The stored verifier opens only with the contact ID it was sealed for.
        let sealed = ContactOwnership.seal(verifier: verifier, contactID: contactID)
        #expect(sealed.map { ContactOwnership.unseal($0, contactID: contactID) } == verifier)
        #expect(sealed.flatMap { ContactOwnership.unseal($0, contactID: Self.random(32)) } == nil)
        #expect(ContactOwnership.routingID(of: [7, 8, 9] + Self.random(29))?.bytes == [7, 8, 9])
        #expect(ContactOwnership.routingID(of: Self.random(31)) == nil)
    }
}
