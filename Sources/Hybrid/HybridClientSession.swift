import Crypto

/// The client role of a hybrid session, as a state machine: events in, actions out, no I/O. A QR-initiated session
/// goes from "QR shown" through "advert matched" and "handshake sent" to "ready for CTAP"; a linked
/// (state-assisted) one from "contacting" (the relay wakes the phone) through "awaiting the advert" to the same
/// handshake, with the phone's identity key instead of the QR key (Chromium: fido_tunnel_device.cc,
/// v2_discovery.cc). It makes every decision: which timer runs and what its expiry means, when the handshake is
/// done, what to report. A driver (`HybridClientLink`) carries out its actions.
///
/// Noncopyable, because it owns the session's `Crypter`: a copy could reuse its nonces.
public struct HybridClientSession: ~Copyable {
    /// What the driver must do next.
    public enum Action: Hashable, Sendable {
        /// Tell the user (status lines); `.showQRCode` carries the URL to render.
        case report(HybridClientProgress)
        /// Listen for BLE adverts and pass each caBLE service data to `advertReceived(_:)`.
        case startScanning
        case stopScanning
        /// Open the WebSocket tunnel (subprotocol `fido.cable`) and call `tunnelConnected()`.
        case connect(url: String)
        /// Linked sessions: open the tunnel at `url` (`/cable/contact/…`) with the request header
        /// `X-caBLE-Client-Payload: clientPayload`, and call `tunnelConnected()`. A 410 answer means the phone revoked
        /// the link: forget it.
        case contact(url: String, clientPayload: String)
        /// Send one binary WebSocket message.
        case send([UInt8])
        /// Start the session's one timer, replacing any running one; at expiry call `timerExpired()`.
        case armTimer(Duration)
        /// Stop the timer: its expiry must not be reported any more.
        case cancelTimer
        /// The handshake is done: the authenticator's getInfo response (CBOR, no status byte),
        /// and its linking information when it sent valid linking information.
        case ready(getInfo: [UInt8], linking: LinkingInfo?)
        /// The authenticator's answer to `sendCTAP(_:)`: status byte and CBOR.
        case deliverCTAPResponse([UInt8])
        /// The authenticator sent (verified) linking information in an update message.
        case linkingUpdate(LinkingInfo)
        /// Close the tunnel and stop everything. `nil` is a normal end.
        case close(HybridSessionError?)
    }

    /// Where the session is, for status lines.
    public enum Phase: Hashable, Sendable {
        case qrShown, advertMatched, contacting, awaitingAdvert, handshakeSent, awaitingPostHandshake, ready
        case awaitingResponse, closed
    }

    private enum State {
        case qrShown
        case advertMatched(psk: [UInt8], url: String)
        /// Linked: the contact request is on its way.
        case contacting(url: String)
        /// Linked: the tunnel is open and the relay is waking the phone; its advert has not been seen yet.
        case awaitingAdvert
        case handshakeSent(HandshakeInitiatorWaiting)
        case awaitingPostHandshake(handshakeHash: [UInt8])
        case ready(ProtocolRevision, handshakeHash: [UInt8])
        case awaitingResponse(ProtocolRevision, handshakeHash: [UInt8])
        case closed
    }

    /// How the session finds its authenticator.
    private enum Mode {
        /// A QR code: its key (the KN handshake's static key) and the tunnel ID derived from its secret.
        case qrCode(qrKey: P256.KeyAgreement.PrivateKey, tunnelID: TunnelID)
        /// A linked phone: its identity key (the NK handshake's static key), the link secret, and the contact
        /// request's URL and payload.
        case linked(identity: P256.KeyAgreement.PublicKey, linkSecret: [UInt8], url: String, payload: ClientPayload)
    }

    /// The payload shown as the QR code; nil in a linked session.
    public let qrCode: QRCodePayload?
    /// The session's time limits.
    public let timeouts: HybridTimeouts
    private let mode: Mode
    private let ephemeralKey: P256.KeyAgreement.PrivateKey
    private let eidKey: EIDKey
    private let tunnelServer: TunnelServerBaseURL?
    private var state: State
    private var channel = SessionChannel()
    /// The advert that was accepted, once one was.
    public private(set) var matchedAdvert: AdvertPlaintext?

    /// A session for one QR code. The caller makes `qrKey`, `secret` (16 random bytes) and
    /// `ephemeralKey` (for the Noise handshake) and passes the time; `tunnelServer` replaces the host
    /// decoded from the advert (self-hosted relays and tests).
    public init(
        qrKey: P256.KeyAgreement.PrivateKey,
        secret: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey,
        requestType: HybridRequestType,
        timestamp: UInt64,
        tunnelServer: TunnelServerBaseURL? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(),
        offersLinking: Bool = false
    ) throws(QRCodeError) {
        qrCode = try QRCodePayload(
            clientKey: qrKey, secret: secret, requestType: requestType, timestamp: timestamp,
            offersLinking: offersLinking)
        mode = .qrCode(qrKey: qrKey, tunnelID: KeyDerivation.tunnelID(qrSecret: secret))
        self.ephemeralKey = ephemeralKey
        self.eidKey = KeyDerivation.eidKey(qrSecret: secret)
        self.tunnelServer = tunnelServer
        self.timeouts = timeouts
        state = .qrShown
    }

    /// A linked (state-assisted) session with a phone that sent `link` earlier: the client asks the relay at
    /// `endpoint` to wake the phone (`/cable/contact/{CONTACT_ID}` with the client payload), waits for its advert
    /// (keys from the link secret and the 16-byte `clientNonce`, fresh for every session), then runs the NKpsk0
    /// handshake with the phone's identity key (write-up §7, "Linked").
    public init(
        link: LinkingInfo,
        clientNonce: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey,
        requestType: HybridRequestType,
        endpoint: TunnelServerEndpoint,
        timeouts: HybridTimeouts = HybridTimeouts()
    ) throws(LinkedSessionError) {
        let identity: P256.KeyAgreement.PublicKey
        do throws(LinkingError) {
            identity = try link.identityKey()
        } catch {
            throw .linking(error)
        }
        let payload: ClientPayload
        do throws(ClientPayloadError) {
            payload = try ClientPayload(linkID: link.linkID, clientNonce: clientNonce, requestType: requestType)
        } catch {
            throw .clientPayload(error)
        }
        guard !link.contactID.isEmpty else { throw .linking(.invalidField(1)) }
        qrCode = nil
        mode = .linked(
            identity: identity, linkSecret: link.linkSecret, url: endpoint.url(for: .contact(link.contactID)),
            payload: payload)
        self.ephemeralKey = ephemeralKey
        eidKey = KeyDerivation.eidKey(linkSecret: link.linkSecret, clientNonce: clientNonce)
        tunnelServer = nil
        self.timeouts = timeouts
        state = .contacting(url: endpoint.url(for: .contact(link.contactID)))
    }

    public var phase: Phase {
        switch state {
        case .qrShown: .qrShown
        case .advertMatched: .advertMatched
        case .contacting: .contacting
        case .awaitingAdvert: .awaitingAdvert
        case .handshakeSent: .handshakeSent
        case .awaitingPostHandshake: .awaitingPostHandshake
        case .ready: .ready
        case .awaitingResponse: .awaitingResponse
        case .closed: .closed
        }
    }

    /// The Noise handshake hash once the handshake is done (`nil` before, and after the session closed). Both sides
    /// hold the same 32 bytes, so a protocol carried in the tunnel can bind its own messages to this session.
    public var handshakeHash: [UInt8]? {
        switch state {
        case .awaitingPostHandshake(let hash), .ready(_, let hash), .awaitingResponse(_, let hash): hash
        case .qrShown, .advertMatched, .contacting, .awaitingAdvert, .handshakeSent, .closed: nil
        }
    }

    /// Shows the QR code, starts scanning and gives the advert `timeouts.advert` to arrive; a linked session first
    /// sends the contact request.
    public mutating func start() -> [Action] {
        switch state {
        case .qrShown:
            guard let qrCode else { return [] }
            // The radio listens before the code is shown: a phone that scans it at once and advertises only
            // briefly must not find the computer deaf.
            return [.startScanning, .report(.showQRCode(url: qrCode.url)), .armTimer(timeouts.advert)]
        case .contacting(let url):
            guard case .linked(_, _, _, let payload) = mode else { return [] }
            return [.report(.contacting(url: url)), .contact(url: url, clientPayload: payload.headerValue)]
        default:
            return []
        }
    }

    /// One caBLE service data seen by the scanner. Adverts for other sessions are ignored, and so is
    /// everything after the first match (Chromium accepts one device per QR code).
    public mutating func advertReceived(_ serviceData: [UInt8]) -> [Action] {
        if case .awaitingAdvert = state { return linkedAdvertReceived(serviceData) }
        guard case .qrShown = state, case .qrCode(_, let tunnelID) = mode, let qrCode,
            let plaintext = try? eidKey.decrypt(serviceData)
        else { return [] }
        matchedAdvert = plaintext
        let endpoint = tunnelServer.map(TunnelServerEndpoint.override) ?? .domain(plaintext.domain)
        let url = endpoint.url(for: .connect(plaintext.routingID, tunnelID))
        state = .advertMatched(psk: KeyDerivation.psk(secret: qrCode.secret, advert: plaintext), url: url)
        return [
            .stopScanning, .cancelTimer, .report(.advertSeen(routingID: plaintext.routingID, domain: plaintext.domain)),
            .connect(url: url),
        ]
    }

    /// The tunnel is open: send Noise message 1 at once, as Chromium does, and give the authenticator
    /// `timeouts.handshake` to answer. In a linked session the relay is now waking the phone: scan for its advert
    /// for `timeouts.advert`.
    public mutating func tunnelConnected() -> [Action] {
        if case .contacting(let url) = state {
            state = .awaitingAdvert
            return [.report(.tunnelConnected(url: url)), .startScanning, .armTimer(timeouts.advert)]
        }
        guard case .advertMatched(let psk, let url) = state, case .qrCode(let qrKey, _) = mode else {
            return fail(.protocolViolation(.tunnelOpenedBeforeAdvert))
        }
        do throws(NoiseError) {
            let (message, waiting) = try HandshakeInitiator(
                kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: ephemeralKey
            ).makeMessage()
            state = .handshakeSent(waiting)
            return [.send(message), .report(.tunnelConnected(url: url)), .armTimer(timeouts.handshake)]
        } catch {
            return fail(.handshake(error))
        }
    }

    /// One binary message from the tunnel.
    public mutating func received(_ message: [UInt8]) -> [Action] {
        switch state {
        case .handshakeSent(let waiting):
            do throws(NoiseError) {
                let result = try waiting.processResponse(message)
                state = .awaitingPostHandshake(handshakeHash: result.handshakeHash)
                channel.establish(result.crypter)
                return []
            } catch {
                return fail(.handshake(error))
            }
        case .awaitingPostHandshake(let handshakeHash):
            return receivedPostHandshake(message, handshakeHash: handshakeHash)
        case .ready(let revision, let handshakeHash):
            return receivedFrame(message, revision: revision, handshakeHash: handshakeHash, awaiting: false)
        case .awaitingResponse(let revision, let handshakeHash):
            return receivedFrame(message, revision: revision, handshakeHash: handshakeHash, awaiting: true)
        case .qrShown, .advertMatched, .contacting, .awaitingAdvert:
            return fail(.protocolViolation(.messageBeforeHandshake))
        case .closed:
            return []
        }
    }

    /// Sends one CTAP request (command byte and CBOR); the answer arrives as `.deliverCTAPResponse`, within
    /// `timeouts.request`.
    public mutating func sendCTAP(_ request: [UInt8]) -> [Action] {
        guard case .ready(let revision, let handshakeHash) = state else {
            return fail(.protocolViolation(.requestWhileBusy))
        }
        let message: [UInt8]
        do throws(HybridSessionError) {
            message = try channel.seal(TunnelFrame(type: .ctap, payload: request), revision: revision)
        } catch {
            return fail(error)
        }
        state = .awaitingResponse(revision, handshakeHash: handshakeHash)
        return [.send(message), .report(.requestSent(command: request.first ?? 0)), .armTimer(timeouts.request)]
    }

    /// The timer armed last expired: what that means depends on what the session waits for.
    public mutating func timerExpired() -> [Action] {
        switch state {
        case .qrShown: fail(.noNearbyAuthenticator(timeout: timeouts.advert))
        case .awaitingAdvert: fail(.linkedPhoneNotNear(timeout: timeouts.advert))
        case .handshakeSent, .awaitingPostHandshake: fail(.timedOut(.handshake, timeout: timeouts.handshake))
        case .awaitingResponse: fail(.timedOut(.response, timeout: timeouts.request))
        case .advertMatched, .contacting, .ready, .closed: []
        }
    }

    /// Ends the session: a shutdown message (revision 1 only), then close.
    public mutating func shutdown() -> [Action] {
        switch state {
        case .ready(let revision, _), .awaitingResponse(let revision, _):
            state = .closed
            guard revision == .one, let message = try? channel.seal(.shutdown, revision: revision) else {
                return [.close(nil)]
            }
            return [.send(message), .close(nil)]
        case .closed:
            return []
        default:
            state = .closed
            return [.stopScanning, .close(nil)]
        }
    }

    /// The tunnel closed from the other side.
    public mutating func tunnelClosed() -> [Action] {
        switch state {
        case .closed: return []
        case .ready:
            state = .closed
            return [.close(nil)]
        default:
            return fail(.tunnelClosed)
        }
    }

    // MARK: Helpers

    /// Linked: the phone's advert (keys from the link secret and the client nonce) → message 1 of the NK handshake.
    /// Adverts that are not this phone's are ignored.
    private mutating func linkedAdvertReceived(_ serviceData: [UInt8]) -> [Action] {
        guard case .linked(let identity, let linkSecret, _, _) = mode, let plaintext = try? eidKey.decrypt(serviceData)
        else { return [] }
        matchedAdvert = plaintext
        do throws(NoiseError) {
            let (message, waiting) = try HandshakeInitiator(
                kind: .stateAssisted(peerIdentity: identity),
                psk: KeyDerivation.psk(secret: linkSecret, advert: plaintext), ephemeralKey: ephemeralKey
            ).makeMessage()
            state = .handshakeSent(waiting)
            return [
                .stopScanning, .cancelTimer, .report(.linkedPhoneNear), .send(message), .armTimer(timeouts.handshake),
            ]
        } catch {
            return fail(.handshake(error))
        }
    }

    private mutating func receivedPostHandshake(_ message: [UInt8], handshakeHash: [UInt8]) -> [Action] {
        let plaintext: [UInt8]
        do throws(HybridSessionError) {
            plaintext = try channel.open(message)
        } catch {
            return fail(error)
        }
        do throws(PostHandshakeError) {
            let (postHandshake, revision) = try PostHandshakeMessage.parse(plaintext)
            guard postHandshake.supportsCTAP, let getInfo = postHandshake.getInfo else {
                return fail(.protocolViolation(.noCTAP))
            }
            var linking: LinkingInfo? = nil
            // A linked session has no QR key to check a signature with; like Chromium, it ignores key 2 then.
            if let offered = postHandshake.linking, case .qrCode(let qrKey, _) = mode {
                do throws(LinkingError) {
                    try offered.verifySignature(qrKey: qrKey, handshakeHash: handshakeHash)
                    linking = offered
                } catch {
                    return fail(.linking(error))
                }
            }
            state = .ready(revision, handshakeHash: handshakeHash)
            return [.cancelTimer, .report(.handshakeDone), .ready(getInfo: getInfo, linking: linking)]
        } catch {
            return fail(.postHandshake(error))
        }
    }

    private mutating func receivedFrame(
        _ message: [UInt8], revision: ProtocolRevision, handshakeHash: [UInt8], awaiting: Bool
    ) -> [Action] {
        let plaintext: [UInt8]
        do throws(HybridSessionError) {
            plaintext = try channel.open(message)
        } catch {
            return fail(error)
        }
        let framed: TunnelFrame
        do throws(FramingError) {
            framed = try TunnelFrame(plaintext: plaintext, revision: revision)
        } catch {
            return fail(.framing(error))
        }
        switch framed.type {
        case .ctap where awaiting:
            state = .ready(revision, handshakeHash: handshakeHash)
            return [
                .cancelTimer, .report(.responseReceived(status: framed.payload.first ?? 0xFF)),
                .deliverCTAPResponse(framed.payload),
            ]
        case .update:
            do throws(PostHandshakeError) {
                guard let linking = try UpdateMessage(payload: framed.payload).linking,
                    case .qrCode(let qrKey, _) = mode
                else { return [] }
                do throws(LinkingError) {
                    try linking.verifySignature(qrKey: qrKey, handshakeHash: handshakeHash)
                } catch {
                    return fail(.linking(error))
                }
                return [.linkingUpdate(linking)]
            } catch {
                return fail(.postHandshake(error))
            }
        case .ctap:
            return fail(.protocolViolation(.responseWithoutRequest))
        default:
            // Chromium treats a shutdown from the authenticator, JSON and unknown types as errors here.
            return fail(.protocolViolation(.unexpectedMessageType(framed.type.rawValue)))
        }
    }

    private mutating func fail(_ error: HybridSessionError) -> [Action] {
        guard case .closed = state else {
            state = .closed
            channel.close()
            return [.stopScanning, .close(error)]
        }
        return []
    }
}
