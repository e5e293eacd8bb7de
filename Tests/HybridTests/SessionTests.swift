import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Hybrid
import Testing
import WebAuthn

/// Both session state machines run against each other in memory, with a real authenticator behind
/// the phone, and against the shared vectors with fixed keys.
struct SessionTests {
    static let relay = try! TunnelServerBaseURL(string: "ws://127.0.0.1:8080")

    static func random(_ count: Int) -> [UInt8] { AuthenticatorEnvironment.systemRandomBytes(count) }

    /// A client and a phone that have gone through QR, advert and handshake, ready for CTAP.
    struct Pair: ~Copyable {
        var client: HybridClientSession
        var phone: HybridAuthenticatorSession
    }

    static func connect(requestType: HybridRequestType, getInfo: [UInt8]) throws -> Pair {
        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: random(16), ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: requestType, timestamp: 1_800_000_000, tunnelServer: relay)
        let shown = try client.requireQRCode()
        // Scanning starts before the code is shown, so no advert of a quick phone is missed.
        #expect(client.start() == [.startScanning, .report(.showQRCode(url: shown.url)), .armTimer(.seconds(120))])
        #expect(client.phase == .qrShown)

        // The phone scans the QR code as text, as a camera would read it.
        let scanned = try QRCodePayload(url: shown.url)
        #expect(scanned.requestType == requestType)
        var phone = try HybridAuthenticatorSession(
            qrCode: scanned, getInfo: getInfo, ephemeralKey: P256.KeyAgreement.PrivateKey(), advertNonce: random(10),
            tunnelServer: relay, keepOpen: true)
        let tunnelID = KeyDerivation.tunnelID(qrSecret: shown.secret)
        let newURL = "ws://127.0.0.1:8080/cable/new/\(tunnelID.hex)"
        #expect(phone.start() == [.report(.connecting(url: newURL)), .connect(url: newURL)])
        let routingID = try RoutingID(bytes: [0x0A, 0x0B, 0x0C])
        let advertising = phone.tunnelConnected(routingID: routingID)
        guard case .advertise(let serviceData) = try #require(advertising.first) else {
            Issue.record("no advert: \(advertising)")
            throw HybridSessionError.tunnelClosed
        }
        #expect(serviceData.count == 20)
        #expect(advertising.dropFirst() == [.report(.advertising(routingID: routingID)), .armTimer(.seconds(120))])
        #expect(phone.phase == .advertising)

        // Somebody else's advert nearby is ignored; ours matches.
        #expect(client.advertReceived(random(20)).isEmpty)
        #expect(
            client.advertReceived(serviceData) == [
                .stopScanning, .cancelTimer, .report(.advertSeen(routingID: routingID, domain: .google)),
                .connect(url: "ws://127.0.0.1:8080/cable/connect/0A0B0C/\(tunnelID.hex)"),
            ])
        #expect(client.matchedAdvert?.routingID == routingID)
        #expect(client.advertReceived(serviceData).isEmpty)  // one device per QR code

        let hello = client.tunnelConnected()
        guard case .send(let message1) = try #require(hello.first) else { throw HybridSessionError.tunnelClosed }
        #expect(message1.count == 81)
        #expect(
            hello.dropFirst() == [
                .report(.tunnelConnected(url: "ws://127.0.0.1:8080/cable/connect/0A0B0C/\(tunnelID.hex)")),
                .armTimer(.seconds(120)),
            ])
        #expect(client.phase == .handshakeSent)
        let answer = phone.received(message1)
        #expect(answer.count == 5)
        #expect(answer.dropFirst(3) == [.report(.handshakeDone), .armTimer(.seconds(120))])
        guard answer.count == 5, answer[0] == .stopAdvertising, case .send(let message2) = answer[1],
            case .send(let postHandshake) = answer[2]
        else {
            Issue.record("unexpected handshake answer \(answer)")
            throw HybridSessionError.tunnelClosed
        }
        #expect(message2.count == 81)
        #expect(client.received(message2).isEmpty)
        #expect(
            client.received(postHandshake) == [
                .cancelTimer, .report(.handshakeDone), .ready(getInfo: getInfo, linking: nil),
            ])
        #expect(client.phase == .ready && phone.phase == .ready)
        return Pair(client: client, phone: phone)
    }

    /// One CTAP exchange through both sessions, answered by `authenticator`.
    static func exchange(_ pair: inout Pair, _ request: [UInt8], authenticator: Authenticator) async throws -> [UInt8] {
        guard case .send(let sealed) = try #require(pair.client.sendCTAP(request).first) else {
            throw HybridSessionError.tunnelClosed
        }
        #expect(
            pair.phone.received(sealed) == [
                .cancelTimer, .report(.requestReceived(command: request[0])), .deliverCTAPRequest(request),
            ])
        let response = await authenticator.handle(request)
        guard case .send(let sealedResponse) = try #require(pair.phone.ctapResponse(response).first) else {
            throw HybridSessionError.tunnelClosed
        }
        #expect(
            pair.client.received(sealedResponse) == [
                .cancelTimer, .report(.responseReceived(status: response[0])), .deliverCTAPResponse(response),
            ])
        return response
    }

    @Test func registerThenSignInAcrossDevices() async throws {
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(
                store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
        let getInfo = Array((await authenticator.handle([CTAPCommand.getInfo.rawValue])).dropFirst())
        let clientDataHash = Array(SHA256.hash(data: Array("clientDataJSON".utf8)))

        var registration = try Self.connect(requestType: .makeCredential, getInfo: getInfo)
        let made = try MakeCredentialResponse(
            ctapResponse: try await Self.exchange(
                &registration,
                CTAPClient.makeCredentialMessage(
                    clientDataHash: clientDataHash, relyingPartyID: "example.com", relyingPartyName: nil,
                    userHandle: [1, 2, 3], userName: "alice", userDisplayName: "Alice"),
                authenticator: authenticator))
        let shutdown = registration.client.shutdown()
        #expect(shutdown.count == 2 && shutdown.last == .close(nil))
        if case .send(let sealed) = shutdown.first {
            #expect(registration.phone.received(sealed) == [.close(nil)])
        } else {
            Issue.record("the shutdown sends nothing to the phone: \(shutdown)")
        }

        var signIn = try Self.connect(requestType: .getAssertion, getInfo: getInfo)
        let assertion = try GetAssertionResponse(
            ctapResponse: try await Self.exchange(
                &signIn, CTAPClient.getAssertionMessage(relyingPartyID: "example.com", clientDataHash: clientDataHash),
                authenticator: authenticator))
        #expect(assertion.credentialID == made.credentialID)
        let key = try #require(made.attestationObject.authenticatorData.attestedCredentialData).publicKey
        let signature = try P256.Signing.ECDSASignature(derRepresentation: assertion.signature)
        #expect(try key.signingKey().isValidSignature(signature, for: assertion.authenticatorData + clientDataHash))
        #expect(signIn.phone.tunnelClosed() == [.close(nil)])
        #expect(signIn.client.tunnelClosed() == [.close(nil)])
    }

    @Test func severalRequestsInOneSession() async throws {
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(
                store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
        var pair = try Self.connect(requestType: .getAssertion, getInfo: [0xA0])
        for _ in 0..<5 {
            let response = try await Self.exchange(&pair, [CTAPCommand.getInfo.rawValue], authenticator: authenticator)
            #expect(response.first == 0)
        }
    }

    /// The shared advert vector, through both roles with the vector's fixed secret, nonce and routing ID.
    @Test func vectorAdvertThroughBothRoles() throws {
        let vector = try #require(try HybridVectors.section("adverts").first as? [String: Any])
        let secret = [UInt8](hex: vector["qr_secret"] as! String)!
        let advert = [UInt8](hex: vector["advert"] as! String)!
        let nonce = [UInt8](hex: vector["nonce"] as! String)!
        let routingID = try RoutingID(bytes: [UInt8](hex: vector["routing_id"] as! String)!)
        let connectURL = try #require(vector["connect_url"] as? String)

        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: secret, ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        _ = client.start()
        let matched = client.advertReceived(advert)
        let matchedAdvert = client.matchedAdvert
        let plaintext = try #require(matchedAdvert)
        #expect(plaintext.routingID == routingID)
        #expect(
            matched == [
                .stopScanning, .cancelTimer, .report(.advertSeen(routingID: routingID, domain: plaintext.domain)),
                .connect(url: connectURL),
            ])

        var phone = try HybridAuthenticatorSession(
            qrCode: try client.requireQRCode(), getInfo: [0xA0], ephemeralKey: P256.KeyAgreement.PrivateKey(),
            advertNonce: nonce)
        _ = phone.start()
        #expect(
            phone.tunnelConnected(routingID: routingID) == [
                .advertise(serviceData: advert), .report(.advertising(routingID: routingID)), .armTimer(.seconds(120)),
            ])
    }

    // MARK: Failures end the session

    @Test func tamperedHandshakeClosesTheAuthenticator() throws {
        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: Self.random(16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        var phone = try HybridAuthenticatorSession(
            qrCode: try client.requireQRCode(), getInfo: [0xA0], ephemeralKey: P256.KeyAgreement.PrivateKey(),
            advertNonce: Self.random(10))
        _ = phone.start()
        guard case .advertise(let serviceData) = phone.tunnelConnected(routingID: try RoutingID(bytes: [1, 2, 3]))[0]
        else { throw HybridSessionError.tunnelClosed }
        _ = client.start()
        _ = client.advertReceived(serviceData)
        guard case .send(var message1) = client.tunnelConnected()[0] else { throw HybridSessionError.tunnelClosed }
        message1[80] ^= 1
        #expect(phone.received(message1) == [.stopAdvertising, .close(.handshake(.authenticationFailed))])
        #expect(phone.phase == .closed)
        #expect(phone.received(message1).isEmpty)
    }

    @Test func aDifferentQRCodesAuthenticatorCannotFinishTheHandshake() throws {
        var pair = try Self.connect(requestType: .getAssertion, getInfo: [0xA0])
        _ = pair.client.shutdown()
        // A phone that scanned some other QR code answers the client's message 1 with its own keys.
        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: Self.random(16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        var impostor = try HybridAuthenticatorSession(
            qrCode: try pair.client.requireQRCode(), getInfo: [0xA0], ephemeralKey: P256.KeyAgreement.PrivateKey(),
            advertNonce: Self.random(10))
        _ = impostor.start()
        guard
            case .advertise(let impostorAdvert) = impostor.tunnelConnected(routingID: try RoutingID(bytes: [1, 2, 3]))[
                0]
        else { throw HybridSessionError.tunnelClosed }
        _ = client.start()
        #expect(client.advertReceived(impostorAdvert).isEmpty)  // not encrypted under this QR code's keys
        #expect(client.phase == .qrShown)
    }

    @Test func protocolViolationsCloseWithAReason() throws {
        var pair = try Self.connect(requestType: .getAssertion, getInfo: [0xA0])
        // A response with no request outstanding is refused by the client.
        guard case .send(let sealed) = try #require(pair.client.sendCTAP([0x04]).first) else {
            throw HybridSessionError.tunnelClosed
        }
        #expect(
            pair.phone.received(sealed) == [
                .cancelTimer, .report(.requestReceived(command: 0x04)), .deliverCTAPRequest([0x04]),
            ])
        #expect(pair.phone.received(sealed) == [.close(.protocolViolation(.secondRequest))])
        #expect(pair.phone.ctapResponse([0]).isEmpty || pair.phone.phase == .closed)

        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: Self.random(16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        #expect(
            client.sendCTAP([0x04]).last
                == .close(.protocolViolation(.requestWhileBusy)))
        #expect(client.received([1, 2, 3]).isEmpty)  // closed sessions ignore late messages
    }

    @Test func garbageAfterTheHandshakeClosesBothSides() throws {
        var pair = try Self.connect(requestType: .getAssertion, getInfo: [0xA0])
        #expect(pair.client.received(Self.random(64)) == [.stopScanning, .close(.crypter(.authenticationFailed))])
        #expect(pair.phone.received(Self.random(64)) == [.close(.crypter(.authenticationFailed))])
        #expect(pair.phone.tunnelClosed().isEmpty)
    }

    @Test func tunnelClosingEarlyIsAnError() throws {
        var client = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: Self.random(16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        _ = client.start()
        #expect(client.tunnelClosed() == [.stopScanning, .close(.tunnelClosed)])
    }
}

/// The decisions the drivers used to make, now the sessions': which timer runs and what its expiry means, whether
/// the phone stays open, the relay's routing ID header.
struct SessionDecisionTests {
    static let timeouts: HybridTimeouts = {
        var timeouts = HybridTimeouts()
        timeouts.advert = .seconds(1)
        timeouts.handshake = .seconds(2)
        timeouts.request = .seconds(3)
        return timeouts
    }()

    static func client() throws -> HybridClientSession {
        try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: SessionTests.random(16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(), requestType: .getAssertion, timestamp: 0,
            tunnelServer: SessionTests.relay, timeouts: timeouts)
    }

    static func phone(for client: borrowing HybridClientSession, keepOpen: Bool) throws -> HybridAuthenticatorSession {
        try HybridAuthenticatorSession(
            qrCode: try client.requireQRCode(), getInfo: [0xA0], ephemeralKey: P256.KeyAgreement.PrivateKey(),
            advertNonce: SessionTests.random(10), tunnelServer: SessionTests.relay, keepOpen: keepOpen,
            timeouts: timeouts)
    }

    @Test func theAdvertTimerMeansNoAuthenticatorIsNear() throws {
        var client = try Self.client()
        #expect(client.start().last == .armTimer(.seconds(1)))
        #expect(client.timerExpired() == [.stopScanning, .close(.noNearbyAuthenticator(timeout: .seconds(1)))])
        #expect(client.phase == .closed)
        #expect(client.timerExpired().isEmpty)
    }

    @Test func theClientsLaterTimersMeanTheHandshakeOrTheAnswerIsLate() throws {
        var client = try Self.client()
        var phone = try Self.phone(for: client, keepOpen: true)
        _ = client.start()
        _ = phone.start()
        guard case .advertise(let advert) = phone.tunnelConnected(routingIDHeader: "0A0B0C").first else {
            Issue.record("no advert")
            return
        }
        _ = client.advertReceived(advert)
        // Between the advert and the open tunnel no timer runs: the driver's connect limit applies.
        #expect(client.timerExpired().isEmpty)
        let hello = client.tunnelConnected()
        #expect(hello.last == .armTimer(.seconds(2)))
        var late = try Self.client()
        _ = late.start()
        _ = late.advertReceived(advert)  // another QR code's advert: ignored, still waiting for its own
        #expect(late.phase == .qrShown)

        guard case .send(let message1) = hello.first else {
            Issue.record("no handshake message: \(hello)")
            return
        }
        let answer = phone.received(message1)
        #expect(answer.last == .armTimer(.seconds(3)))  // the phone now waits up to 3 s for a request
        for case .send(let message) in answer { _ = client.received(message) }
        #expect(client.phase == .ready)
        #expect(client.timerExpired().isEmpty)  // idle and ready: no timer runs
        #expect(client.sendCTAP([0x04]).last == .armTimer(.seconds(3)))
        #expect(client.timerExpired() == [.stopScanning, .close(.timedOut(.response, timeout: .seconds(3)))])
    }

    @Test func theHandshakeTimerOnTheClientMeansTheAuthenticatorNeverAnswered() throws {
        var client = try Self.client()
        var phone = try Self.phone(for: client, keepOpen: false)
        _ = client.start()
        _ = phone.start()
        let advertising = phone.tunnelConnected(routingIDHeader: "0a0b0c")
        guard case .advertise(let advert) = advertising.first else {
            Issue.record("no advert: \(advertising)")
            return
        }
        _ = client.advertReceived(advert)
        _ = client.tunnelConnected()
        #expect(client.timerExpired() == [.stopScanning, .close(.timedOut(.handshake, timeout: .seconds(2)))])
        // The phone's handshake timer means no client came.
        #expect(
            phone.timerExpired() == [.stopAdvertising, .close(.clientNeverConnected(timeout: .seconds(2)))])
    }

    @Test func aPhoneWithoutKeepOpenEndsAfterOneAnswerAndAKeptOpenOneWaitsForTheNext() throws {
        for keepOpen in [false, true] {
            var client = try Self.client()
            var phone = try Self.phone(for: client, keepOpen: keepOpen)
            _ = client.start()
            _ = phone.start()
            let advertising = phone.tunnelConnected(routingIDHeader: "010203")
            guard case .advertise(let advert) = advertising.first else {
                Issue.record("keepOpen \(keepOpen): no advert: \(advertising)")
                return
            }
            _ = client.advertReceived(advert)
            let hello = client.tunnelConnected()
            guard case .send(let message1) = hello.first else {
                Issue.record("keepOpen \(keepOpen): no handshake message: \(hello)")
                return
            }
            for case .send(let message) in phone.received(message1) { _ = client.received(message) }
            let sending = client.sendCTAP([0x04])
            guard case .send(let request) = sending.first else {
                Issue.record("keepOpen \(keepOpen): the request is not sent: \(sending)")
                return
            }
            #expect(phone.received(request).last == .deliverCTAPRequest([0x04]))
            let answered = phone.ctapResponse([0x00, 0xA0])
            #expect(phone.answeredRequests == 1)
            #expect(
                answered.dropFirst() == [
                    .report(.responseSent(status: 0)), keepOpen ? .armTimer(.seconds(3)) : .close(nil),
                ])
            #expect(phone.phase == (keepOpen ? .ready : .closed))
            if keepOpen {
                #expect(
                    phone.timerExpired() == [.close(.timedOut(.nextRequest, timeout: .seconds(3)))])
            }
        }
    }

    @Test(arguments: [nil, "", "0A0B", "0A0B0C0D", "zzzzzz", String(repeating: "A", count: 100)])
    func aMissingOrMalformedRoutingIDHeaderEndsThePhonesSession(header: String?) throws {
        let client = try Self.client()
        var phone = try Self.phone(for: client, keepOpen: false)
        _ = phone.start()
        let expected = header.map { String($0.prefix(16)) }
        #expect(phone.tunnelConnected(routingIDHeader: header) == [.close(.badRoutingID(expected))])
        #expect(phone.phase == .closed)
    }
}
