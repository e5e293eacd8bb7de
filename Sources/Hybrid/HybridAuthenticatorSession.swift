import Crypto

/// The authenticator role of a QR-initiated hybrid session, as a state machine: from "QR scanned"
/// through "routing ID received, advert built" to "handshake answered, post-handshake sent", then
/// CTAP requests in and responses out (Chromium: v2_authenticator.cc). It makes every decision: which timer runs
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

    /// The scanned QR code.
    public let qrCode: QRCodePayload
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
        timeouts: HybridTimeouts = HybridTimeouts()
    ) throws(AdvertError) {
        guard advertNonce.count == AdvertPlaintext.nonceByteCount else {
            throw .invalidNonceLength(advertNonce.count)
        }
        self.qrCode = qrCode
        self.getInfo = getInfo
        self.ephemeralKey = ephemeralKey
        self.advertNonce = advertNonce
        self.domain = domain
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

    /// Connects to the tunnel server under the tunnel ID derived from the QR secret.
    public mutating func start() -> [Action] {
        guard case .qrScanned = state else { return [] }
        state = .connecting
        let endpoint = tunnelServer.map(TunnelServerEndpoint.override) ?? .domain(domain)
        let url = endpoint.url(for: .new(KeyDerivation.tunnelID(qrSecret: qrCode.secret)))
        return [.report(.connecting(url: url)), .connect(url: url)]
    }

    /// The tunnel server accepted the tunnel with this `X-caBLE-Routing-ID` header (`nil` when it sent none).
    public mutating func tunnelConnected(routingIDHeader header: String?) -> [Action] {
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
        guard case .connecting = state else {
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
            do throws(NoiseError) {
                response = try HandshakeResponder.respond(
                    to: message, kind: .qrInitiated(qrPublicKey: qrCode.publicKey), psk: psk,
                    ephemeralKey: ephemeralKey)
            } catch {
                return fail(.handshake(error))
            }
            let handshakeMessage = response.message
            handshakeHash = response.result.handshakeHash
            channel.establish(response.result.crypter)
            // The post-handshake message carries getInfo; revision 1 (unpadded, with type bytes after it).
            let postHandshake = PostHandshakeMessage(getInfo: getInfo).plaintext(revision: .one)
            let encrypted: [UInt8]
            do throws(HybridSessionError) {
                encrypted = try channel.seal(postHandshake)
            } catch {
                return fail(error)
            }
            state = .ready
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
