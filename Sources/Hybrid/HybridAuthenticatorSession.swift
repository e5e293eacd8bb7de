import Crypto

/// The authenticator role of a hybrid session, as a state machine: from "QR scanned" (or, linked, "woken by the
/// relay") through "tunnel open, advert built" to "handshake answered, post-handshake sent", then CTAP requests in
/// and responses out (Chromium: v2_authenticator.cc). It makes every decision: which timer runs
/// and what its expiry means, whether the session stays open after a request, what to report. A driver
/// (`HybridAuthenticatorLink`) carries out its actions.
///
/// Noncopyable, because it owns the session's `Crypter`.
public struct HybridAuthenticatorSession: ~Copyable {
    /// What the driver must do next.
    public enum Action: Hashable, Sendable {
        /// Tell the user (status lines).
        case report(HybridAuthenticatorProgress)
        /// Open `/cable/new/…` on the tunnel server (subprotocol `fido.cable`) and pass the
        /// `X-caBLE-Routing-ID` response header to `tunnelConnected(routingIDHeader:)`.
        case connect(url: String)
        /// Advertise this 20-byte caBLE service data (UUID 0xFFF9) until told to stop.
        case advertise(serviceData: [UInt8])
        case stopAdvertising
        /// Send one binary WebSocket message.
        case send([UInt8])
        /// Start the session's one timer, replacing any running one; at expiry call `timerExpired()`.
        case armTimer(Duration)
        /// Stop the timer: its expiry must not be reported any more.
        case cancelTimer
        /// A CTAP request from the client (command byte and CBOR): answer with `ctapResponse(_:)`.
        case deliverCTAPRequest([UInt8])
        /// Close the tunnel and stop everything. `nil` is a normal end.
        case close(HybridSessionError?)
    }

    /// Where the session is, for status lines.
    public enum Phase: Hashable, Sendable {
        case qrScanned, connecting, advertising, ready, processing, closed
    }

    private enum State {
        case qrScanned
        case connecting
        case advertising(psk: [UInt8])
        case ready
        case processing
        case closed
    }

    /// How the session was started.
    private enum Mode {
        /// A scanned QR code, and the linking information to offer when the client can store it.
        case qrCode(QRCodePayload, offer: LinkingOffer?)
        /// A wake for a linked client: the link's secret, the phone's identity key, the client payload and the
        /// 15 random bytes the advert carries.
        case linked(linkSecret: [UInt8], identityKey: P256.KeyAgreement.PrivateKey, payload: ClientPayload, url: String)
    }

    /// The scanned QR code; nil in a linked session.
    public let qrCode: QRCodePayload?
    /// Whether linking information went to the client in the post-handshake message.
    public private(set) var sentLinking = false
    private let mode: Mode
    /// The tunnel server domain this authenticator uses and advertises.
    public let domain: TunnelDomain
    /// The session's time limits.
    public let timeouts: HybridTimeouts
    /// Whether the session serves more than one request (phones answer one request per QR code).
    public let keepOpen: Bool
    /// How many requests were answered.
    public private(set) var answeredRequests = 0
    /// The Noise handshake hash once the handshake is answered: the client holds the same 32 bytes, so a protocol
    /// carried in the tunnel can bind its own messages to this session.
    public private(set) var handshakeHash: [UInt8]?
    private let tunnelServer: TunnelServerBaseURL?
    private let ephemeralKey: P256.KeyAgreement.PrivateKey
    private let advertNonce: [UInt8]
    private let getInfo: [UInt8]
    private var state = State.qrScanned
    private var channel = SessionChannel()

    /// A session for one scanned QR code. The caller makes `ephemeralKey` and the 10-byte
    /// `advertNonce`, and passes the authenticator's getInfo response (CBOR, no status byte).
    public init(
        qrCode: QRCodePayload,
        getInfo: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey,
        advertNonce: [UInt8],
        domain: TunnelDomain = .google,
        tunnelServer: TunnelServerBaseURL? = nil,
        keepOpen: Bool = false,
        timeouts: HybridTimeouts = HybridTimeouts(),
        linkingOffer: LinkingOffer? = nil
    ) throws(AdvertError) {
        guard advertNonce.count == AdvertPlaintext.nonceByteCount else {
            throw .invalidNonceLength(advertNonce.count)
        }
        self.qrCode = qrCode
        mode = .qrCode(qrCode, offer: linkingOffer)
        self.getInfo = getInfo
        self.ephemeralKey = ephemeralKey
        self.advertNonce = advertNonce
        self.domain = domain
        self.tunnelServer = tunnelServer
        self.keepOpen = keepOpen
        self.timeouts = timeouts
    }

    /// A session for a linked client, after the relay woke this phone with `routingID`, `tunnelID` and the client's
    /// payload: join `/cable/connect/{ROUTING_ID}/{TUNNEL_ID}`, advert `0x00 ‖ advertRandom` (15 bytes) under
    /// `Derive(link secret, client nonce, kEIDKey)`, then answer the NKpsk0 handshake with `identityKey`
    /// (Chromium v2_authenticator.cc, the linked flow). `tunnelServer` is the relay that sent the wake.
    public init(
        linkedWake routingID: RoutingID,
        tunnelID: TunnelID,
        clientPayload: ClientPayload,
        linkSecret: [UInt8],
        identityKey: P256.KeyAgreement.PrivateKey,
        getInfo: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey,
        advertRandom: [UInt8],
        tunnelServer: TunnelServerBaseURL?,
        keepOpen: Bool = false,
        timeouts: HybridTimeouts = HybridTimeouts()
    ) throws(AdvertError) {
        guard advertRandom.count == AdvertPlaintext.byteCount - 1 else { throw .wrongLength(advertRandom.count + 1) }
        let endpoint = tunnelServer.map(TunnelServerEndpoint.override) ?? .domain(.google)
        qrCode = nil
        mode = .linked(
            linkSecret: linkSecret, identityKey: identityKey, payload: clientPayload,
            url: endpoint.url(for: .connect(routingID, tunnelID)))
        self.getInfo = getInfo
        self.ephemeralKey = ephemeralKey
        // The linked advert carries no routing information (Chromium sends 0x00 ‖ 15 random bytes), but Chromium's
        // decryption still checks the domain bytes, so they are kept out of 2–255.
        var plaintext = [0] + advertRandom
        if !TunnelDomain.isValid(UInt16(plaintext[14]) | UInt16(plaintext[15]) << 8) { plaintext[15] |= 1 }
        advertNonce = plaintext
        domain = .google
        self.tunnelServer = tunnelServer
        self.keepOpen = keepOpen
        self.timeouts = timeouts
    }

    public var phase: Phase {
        switch state {
        case .qrScanned: .qrScanned
        case .connecting: .connecting
        case .advertising: .advertising
        case .ready: .ready
        case .processing: .processing
        case .closed: .closed
        }
    }

    /// Connects to the tunnel server under the tunnel ID derived from the QR secret (linked: joins the tunnel the
    /// wake named).
    public mutating func start() -> [Action] {
        guard case .qrScanned = state else { return [] }
        state = .connecting
        switch mode {
        case .qrCode(let qrCode, _):
            let endpoint = tunnelServer.map(TunnelServerEndpoint.override) ?? .domain(domain)
            let url = endpoint.url(for: .new(KeyDerivation.tunnelID(qrSecret: qrCode.secret)))
            return [.report(.connecting(url: url)), .connect(url: url)]
        case .linked(_, _, _, let url):
            return [.report(.connecting(url: url)), .connect(url: url)]
        }
    }

    /// The tunnel server accepted the tunnel with this `X-caBLE-Routing-ID` header (`nil` when it sent none).
    public mutating func tunnelConnected(routingIDHeader header: String?) -> [Action] {
        if case .linked = mode { return linkedTunnelConnected() }
        guard let header else { return fail(.badRoutingID(nil)) }
        do throws(TunnelIdentifierError) {
            return tunnelConnected(routingID: try RoutingID(hex: header))
        } catch {
            return fail(.badRoutingID(String(header.prefix(16))))
        }
    }

    /// The tunnel server accepted the tunnel and named its routing ID: build and advertise the EID, and give a
    /// client `timeouts.handshake` to start the handshake.
    public mutating func tunnelConnected(routingID: RoutingID) -> [Action] {
        guard case .connecting = state, case .qrCode(let qrCode, _) = mode else {
            return fail(.protocolViolation(.tunnelOpenedTwice))
        }
        let plaintext: AdvertPlaintext
        do throws(AdvertError) {
            plaintext = try AdvertPlaintext(nonce: advertNonce, routingID: routingID, domain: domain)
        } catch {
            return fail(.protocolViolation(.unbuildableAdvert(error)))
        }
        state = .advertising(psk: KeyDerivation.psk(secret: qrCode.secret, advert: plaintext))
        return [
            .advertise(serviceData: KeyDerivation.eidKey(qrSecret: qrCode.secret).encrypt(plaintext)),
            .report(.advertising(routingID: routingID)), .armTimer(timeouts.handshake),
        ]
    }

    /// One binary message from the tunnel.
    public mutating func received(_ message: [UInt8]) -> [Action] {
        switch state {
        case .advertising(let psk):
            let response: HandshakeResponse
            let kind: HandshakeResponder.Kind =
                switch mode {
                case .qrCode(let qrCode, _): .qrInitiated(qrPublicKey: qrCode.publicKey)
                case .linked(_, let identityKey, _, _): .stateAssisted(identityKey: identityKey)
                }
            do throws(NoiseError) {
                response = try HandshakeResponder.respond(to: message, kind: kind, psk: psk, ephemeralKey: ephemeralKey)
            } catch {
                return fail(.handshake(error))
            }
            let handshakeMessage = response.message
            handshakeHash = response.result.handshakeHash
            channel.establish(response.result.crypter)
            // Linking information goes with getInfo when the QR code says the client can store it (key 4), the
            // way older phones sent it (key 2 of the post-handshake message).
            var linking: LinkingInfo? = nil
            if case .qrCode(let qrCode, let offer?) = mode, qrCode.stateAssisted == true {
                do throws(LinkingError) {
                    linking = try offer.linkingInfo(
                        clientQRPublicKey: qrCode.publicKey, handshakeHash: response.result.handshakeHash)
                } catch {
                    return fail(.linking(error))
                }
            }
            // The post-handshake message carries getInfo; revision 1 (unpadded, with type bytes after it).
            let postHandshake = PostHandshakeMessage(getInfo: getInfo, linking: linking).plaintext(revision: .one)
            let encrypted: [UInt8]
            do throws(HybridSessionError) {
                encrypted = try channel.seal(postHandshake)
            } catch {
                return fail(error)
            }
            state = .ready
            sentLinking = linking != nil
            return [
                .stopAdvertising, .send(handshakeMessage), .send(encrypted), .report(.handshakeDone),
                .armTimer(timeouts.request),
            ]
        case .ready:
            let plaintext: [UInt8]
            do throws(HybridSessionError) {
                plaintext = try channel.open(message)
            } catch {
                return fail(error)
            }
            let framed: TunnelFrame
            do throws(FramingError) {
                framed = try TunnelFrame(plaintext: plaintext, revision: .one)
            } catch {
                return fail(.framing(error))
            }
            switch framed.type {
            case .ctap:
                state = .processing
                return [
                    .cancelTimer, .report(.requestReceived(command: framed.payload.first ?? 0)),
                    .deliverCTAPRequest(framed.payload),
                ]
            case .shutdown:
                state = .closed
                channel.close()
                return [.close(nil)]
            default:
                return fail(.protocolViolation(.unexpectedClientMessageType(framed.type.rawValue)))
            }
        case .processing:
            return fail(.protocolViolation(.secondRequest))
        case .qrScanned, .connecting:
            return fail(.protocolViolation(.messageBeforeAdvert))
        case .closed:
            return []
        }
    }

    /// The authenticator's answer to the delivered request (status byte and CBOR). Without `keepOpen` the session
    /// then ends; with it, the client has `timeouts.request` to send the next request.
    public mutating func ctapResponse(_ response: [UInt8]) -> [Action] {
        guard case .processing = state else {
            return fail(.protocolViolation(.answerWithoutRequest))
        }
        let encrypted: [UInt8]
        do throws(HybridSessionError) {
            encrypted = try channel.seal(TunnelFrame(type: .ctap, payload: response), revision: .one)
        } catch {
            return fail(error)
        }
        answeredRequests += 1
        let sent: [Action] = [.send(encrypted), .report(.responseSent(status: response.first ?? 0xFF))]
        guard keepOpen else {
            state = .closed
            channel.close()
            return sent + [.close(nil)]
        }
        state = .ready
        return sent + [.armTimer(timeouts.request)]
    }

    /// The timer armed last expired: what that means depends on what the session waits for.
    public mutating func timerExpired() -> [Action] {
        switch state {
        case .advertising: fail(.clientNeverConnected(timeout: timeouts.handshake))
        case .ready: fail(.timedOut(.nextRequest, timeout: timeouts.request))
        case .qrScanned, .connecting, .processing, .closed: []
        }
    }

    /// The tunnel closed from the other side.
    public mutating func tunnelClosed() -> [Action] {
        switch state {
        case .closed: return []
        case .ready:
            state = .closed
            channel.close()
            return [.close(nil)]
        default:
            return fail(.tunnelClosed)
        }
    }

    /// Linked: the tunnel the wake named is joined; advertise the 16 random bytes under the link's advert key.
    private mutating func linkedTunnelConnected() -> [Action] {
        guard case .connecting = state, case .linked(let linkSecret, _, let payload, _) = mode else {
            return fail(.protocolViolation(.tunnelOpenedTwice))
        }
        let plaintext: AdvertPlaintext
        do throws(AdvertError) {
            plaintext = try AdvertPlaintext(bytes: advertNonce)
        } catch {
            return fail(.protocolViolation(.unbuildableAdvert(error)))
        }
        state = .advertising(psk: KeyDerivation.psk(secret: linkSecret, advert: plaintext))
        let eidKey = KeyDerivation.eidKey(linkSecret: linkSecret, clientNonce: payload.clientNonce)
        return [
            .advertise(serviceData: eidKey.encrypt(plaintext)), .report(.advertising(routingID: plaintext.routingID)),
            .armTimer(timeouts.handshake),
        ]
    }

    private mutating func fail(_ error: HybridSessionError) -> [Action] {
        guard case .closed = state else {
            let wasAdvertising: Bool
            if case .advertising = state { wasAdvertising = true } else { wasAdvertising = false }
            state = .closed
            channel.close()
            return (wasAdvertising ? [.stopAdvertising] : []) + [.close(error)]
        }
        return []
    }
}

/// What a phone offers a client that can store linking information (QR key 4): its contact ID at its relay, a link
/// ID and secret made for this client, its identity key and its name. The session signs it over the handshake hash
/// (``LinkingInfo``) and sends it in the post-handshake message.
public struct LinkingOffer: Sendable {
    public var contactID: [UInt8]
    public var linkID: [UInt8]
    public var linkSecret: [UInt8]
    public var identityKey: P256.KeyAgreement.PrivateKey
    public var name: String

    public init(
        contactID: [UInt8], linkID: [UInt8], linkSecret: [UInt8], identityKey: P256.KeyAgreement.PrivateKey,
        name: String
    ) {
        self.contactID = contactID
        self.linkID = linkID
        self.linkSecret = linkSecret
        self.identityKey = identityKey
        self.name = name
    }

    /// The signed linking information for one session.
    func linkingInfo(clientQRPublicKey: P256.KeyAgreement.PublicKey, handshakeHash: [UInt8]) throws(LinkingError)
        -> LinkingInfo
    {
        try LinkingInfo(
            contactID: contactID, linkID: linkID, linkSecret: linkSecret, identityKey: identityKey, name: name,
            clientQRPublicKey: clientQRPublicKey, handshakeHash: handshakeHash)
    }
}
