import CBOR
import Crypto

/// Why a hybrid session ended early. Every error closes the session.
public enum HybridSessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Noise handshake failed (wrong key, PSK, length or tag).
    case handshake(NoiseError)
    /// An encrypted message did not decrypt, or the counters ran out.
    case crypter(CrypterError)
    /// The authenticator's post-handshake message or an update was malformed.
    case postHandshake(PostHandshakeError)
    /// A message after the handshake was badly framed.
    case framing(FramingError)
    /// Linking information came with a bad signature or malformed fields.
    case linking(LinkingError)
    /// The peer sent something the protocol does not allow at this point.
    case protocolViolation(String)
    /// The tunnel closed before the session finished.
    case tunnelClosed

    public var description: String {
        switch self {
        case .handshake(let error): "hybrid handshake failed: \(error)"
        case .crypter(let error): "hybrid message rejected: \(error)"
        case .postHandshake(let error): "hybrid post-handshake message rejected: \(error)"
        case .framing(let error): "hybrid message framing rejected: \(error)"
        case .linking(let error): "hybrid linking information rejected: \(error)"
        case .protocolViolation(let reason): "hybrid protocol violation: \(reason)"
        case .tunnelClosed: "the tunnel closed before the hybrid session finished"
        }
    }
}

/// The session's crypter once the handshake has made one, failing in the session's own error type. Both roles
/// own one; before the handshake and after the end it holds no keys and refuses to seal or open.
struct SessionChannel: ~Copyable {
    private var crypter: Crypter?

    init() {}

    /// Takes the crypter the handshake produced.
    mutating func establish(_ crypter: consuming Crypter) {
        self.crypter = .some(crypter)
    }

    /// Drops the keys.
    mutating func close() {
        crypter = nil
    }

    mutating func open(_ message: [UInt8]) throws(HybridSessionError) -> [UInt8] {
        guard crypter != nil else { throw .protocolViolation("no session keys yet") }
        do throws(CrypterError) {
            return try crypter!.decrypt(message)
        } catch {
            throw .crypter(error)
        }
    }

    mutating func seal(_ plaintext: [UInt8]) throws(HybridSessionError) -> [UInt8] {
        guard crypter != nil else { throw .protocolViolation("no session keys yet") }
        do throws(CrypterError) {
            return try crypter!.encrypt(plaintext)
        } catch {
            throw .crypter(error)
        }
    }

    mutating func seal(_ frame: TunnelFrame, revision: ProtocolRevision) throws(HybridSessionError) -> [UInt8] {
        let plaintext: [UInt8]
        do throws(FramingError) {
            plaintext = try frame.plaintext(revision: revision)
        } catch {
            throw .framing(error)
        }
        return try seal(plaintext)
    }
}

// MARK: - Client (the computer that shows the QR code)

/// The client role of a QR-initiated hybrid session, as a state machine: events in, actions out,
/// no I/O. It goes from "QR shown" through "advert matched" and "handshake sent" to "ready for CTAP"
/// (Chromium: fido_tunnel_device.cc, v2_discovery.cc).
///
/// Noncopyable, because it owns the session's `Crypter`: a copy could reuse its nonces.
public struct HybridClientSession: ~Copyable {
    /// What the driver must do next.
    public enum Action: Hashable, Sendable {
        /// Listen for BLE adverts and pass each caBLE service data to `advertReceived(_:)`.
        case startScanning
        case stopScanning
        /// Open the WebSocket tunnel (subprotocol `fido.cable`) and call `tunnelConnected()`.
        case connect(url: String)
        /// Send one binary WebSocket message.
        case send([UInt8])
        /// The handshake is done: the authenticator's getInfo response (CBOR, no status byte),
        /// and its linking information when it sent valid linking information.
        case ready(getInfo: [UInt8], linking: LinkingInfo?)
        /// The authenticator's answer to `sendCTAP(_:)`: status byte and CBOR.
        case deliverCTAPResponse([UInt8])
        /// The authenticator sent (verified) linking information in an update message.
        case linkingUpdate(LinkingInfo)
        /// Close the tunnel. `nil` is a normal end.
        case close(HybridSessionError?)
    }

    /// Where the session is, for status lines.
    public enum Phase: Hashable, Sendable {
        case qrShown, advertMatched, handshakeSent, awaitingPostHandshake, ready, awaitingResponse, closed
    }

    private enum State {
        case qrShown
        case advertMatched(psk: [UInt8], plaintext: AdvertPlaintext)
        case handshakeSent(HandshakeInitiatorWaiting)
        case awaitingPostHandshake(handshakeHash: [UInt8])
        case ready(ProtocolRevision, handshakeHash: [UInt8])
        case awaitingResponse(ProtocolRevision, handshakeHash: [UInt8])
        case closed
    }

    /// The payload shown as the QR code.
    public let qrCode: QRCodePayload
    private let qrKey: P256.KeyAgreement.PrivateKey
    private let ephemeralKey: P256.KeyAgreement.PrivateKey
    private let eidKey: EIDKey
    private let tunnelID: TunnelID
    private let tunnelServer: TunnelServerBaseURL?
    private var state = State.qrShown
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
        tunnelServer: TunnelServerBaseURL? = nil
    ) throws(QRCodeError) {
        qrCode = try QRCodePayload(clientKey: qrKey, secret: secret, requestType: requestType, timestamp: timestamp)
        self.qrKey = qrKey
        self.ephemeralKey = ephemeralKey
        self.eidKey = KeyDerivation.eidKey(qrSecret: secret)
        self.tunnelID = KeyDerivation.tunnelID(qrSecret: secret)
        self.tunnelServer = tunnelServer
    }

    public var phase: Phase {
        switch state {
        case .qrShown: .qrShown
        case .advertMatched: .advertMatched
        case .handshakeSent: .handshakeSent
        case .awaitingPostHandshake: .awaitingPostHandshake
        case .ready: .ready
        case .awaitingResponse: .awaitingResponse
        case .closed: .closed
        }
    }

    /// Shows the QR code (the caller renders `qrCode.url`) and starts scanning.
    public mutating func start() -> [Action] {
        guard case .qrShown = state else { return [] }
        return [.startScanning]
    }

    /// One caBLE service data seen by the scanner. Adverts for other sessions are ignored, and so is
    /// everything after the first match (Chromium accepts one device per QR code).
    public mutating func advertReceived(_ serviceData: [UInt8]) -> [Action] {
        guard case .qrShown = state, let plaintext = try? eidKey.decrypt(serviceData) else { return [] }
        matchedAdvert = plaintext
        state = .advertMatched(psk: KeyDerivation.psk(secret: qrCode.secret, advert: plaintext), plaintext: plaintext)
        let endpoint = tunnelServer.map(TunnelServerEndpoint.override) ?? .domain(plaintext.domain)
        return [.stopScanning, .connect(url: endpoint.url(for: .connect(plaintext.routingID, tunnelID)))]
    }

    /// The tunnel is open: send Noise message 1 at once, as Chromium does.
    public mutating func tunnelConnected() -> [Action] {
        guard case .advertMatched(let psk, _) = state else {
            return fail(.protocolViolation("the tunnel opened before an advert matched"))
        }
        do throws(NoiseError) {
            let (message, waiting) = try HandshakeInitiator(
                kind: .qrInitiated(qrKey: qrKey), psk: psk, ephemeralKey: ephemeralKey
            ).makeMessage()
            state = .handshakeSent(waiting)
            return [.send(message)]
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
            let plaintext: [UInt8]
            do throws(HybridSessionError) {
                plaintext = try channel.open(message)
            } catch {
                return fail(error)
            }
            do throws(PostHandshakeError) {
                let (postHandshake, revision) = try PostHandshakeMessage.parse(plaintext)
                guard postHandshake.supportsCTAP, let getInfo = postHandshake.getInfo else {
                    return fail(.protocolViolation("the authenticator does not offer CTAP"))
                }
                var linking: LinkingInfo? = nil
                if let offered = postHandshake.linking {
                    do throws(LinkingError) {
                        try offered.verifySignature(qrKey: qrKey, handshakeHash: handshakeHash)
                        linking = offered
                    } catch {
                        return fail(.linking(error))
                    }
                }
                state = .ready(revision, handshakeHash: handshakeHash)
                return [.ready(getInfo: getInfo, linking: linking)]
            } catch {
                return fail(.postHandshake(error))
            }
        case .ready(let revision, let handshakeHash), .awaitingResponse(let revision, let handshakeHash):
            let awaiting: Bool
            if case .awaitingResponse = state { awaiting = true } else { awaiting = false }
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
                return [.deliverCTAPResponse(framed.payload)]
            case .update:
                do throws(PostHandshakeError) {
                    guard let linking = try UpdateMessage(payload: framed.payload).linking else { return [] }
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
                return fail(.protocolViolation("a CTAP response arrived with no request outstanding"))
            default:
                // Chromium treats a shutdown from the authenticator, JSON and unknown types as errors here.
                return fail(.protocolViolation("unexpected message type \(framed.type.rawValue)"))
            }
        case .qrShown, .advertMatched:
            return fail(.protocolViolation("a tunnel message arrived before the handshake started"))
        case .closed:
            return []
        }
    }

    /// Sends one CTAP request (command byte and CBOR); the answer arrives as `.deliverCTAPResponse`.
    public mutating func sendCTAP(_ request: [UInt8]) -> [Action] {
        guard case .ready(let revision, let handshakeHash) = state else {
            return fail(.protocolViolation("a CTAP request can only be sent when ready and idle"))
        }
        let message: [UInt8]
        do throws(HybridSessionError) {
            message = try channel.seal(TunnelFrame(type: .ctap, payload: request), revision: revision)
        } catch {
            return fail(error)
        }
        state = .awaitingResponse(revision, handshakeHash: handshakeHash)
        return [.send(message)]
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

    private mutating func fail(_ error: HybridSessionError) -> [Action] {
        guard case .closed = state else {
            state = .closed
            channel.close()
            return [.stopScanning, .close(error)]
        }
        return []
    }
}

// MARK: - Authenticator (the phone that scans the QR code)

/// The authenticator role of a QR-initiated hybrid session, as a state machine: from "QR scanned"
/// through "routing ID received, advert built" to "handshake answered, post-handshake sent", then
/// CTAP requests in and responses out (Chromium: v2_authenticator.cc).
///
/// Noncopyable, because it owns the session's `Crypter`.
public struct HybridAuthenticatorSession: ~Copyable {
    /// What the driver must do next.
    public enum Action: Hashable, Sendable {
        /// Open `/cable/new/…` on the tunnel server (subprotocol `fido.cable`) and pass the
        /// `X-caBLE-Routing-ID` response header to `tunnelConnected(routingID:)`.
        case connect(url: String)
        /// Advertise this 20-byte caBLE service data (UUID 0xFFF9) until told to stop.
        case advertise(serviceData: [UInt8])
        case stopAdvertising
        /// Send one binary WebSocket message.
        case send([UInt8])
        /// A CTAP request from the client (command byte and CBOR): answer with `ctapResponse(_:)`.
        case deliverCTAPRequest([UInt8])
        /// Close the tunnel. `nil` is a normal end.
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
        tunnelServer: TunnelServerBaseURL? = nil
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
        return [.connect(url: endpoint.url(for: .new(KeyDerivation.tunnelID(qrSecret: qrCode.secret))))]
    }

    /// The tunnel server accepted the tunnel and named its routing ID: build and advertise the EID.
    public mutating func tunnelConnected(routingID: RoutingID) -> [Action] {
        guard case .connecting = state else {
            return fail(.protocolViolation("the tunnel opened twice"))
        }
        let plaintext: AdvertPlaintext
        do throws(AdvertError) {
            plaintext = try AdvertPlaintext(nonce: advertNonce, routingID: routingID, domain: domain)
        } catch {
            return fail(.protocolViolation("cannot build the advert: \(error)"))
        }
        state = .advertising(psk: KeyDerivation.psk(secret: qrCode.secret, advert: plaintext))
        return [.advertise(serviceData: KeyDerivation.eidKey(qrSecret: qrCode.secret).encrypt(plaintext))]
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
            return [.stopAdvertising, .send(handshakeMessage), .send(encrypted)]
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
                return [.deliverCTAPRequest(framed.payload)]
            case .shutdown:
                state = .closed
                channel.close()
                return [.close(nil)]
            default:
                return fail(.protocolViolation("unexpected message type \(framed.type.rawValue) from the client"))
            }
        case .processing:
            return fail(.protocolViolation("a second request arrived before the first was answered"))
        case .qrScanned, .connecting:
            return fail(.protocolViolation("a tunnel message arrived before the advert was sent"))
        case .closed:
            return []
        }
    }

    /// The authenticator's answer to the delivered request (status byte and CBOR).
    public mutating func ctapResponse(_ response: [UInt8]) -> [Action] {
        guard case .processing = state else {
            return fail(.protocolViolation("a CTAP response with no request outstanding"))
        }
        let encrypted: [UInt8]
        do throws(HybridSessionError) {
            encrypted = try channel.seal(TunnelFrame(type: .ctap, payload: response), revision: .one)
        } catch {
            return fail(error)
        }
        state = .ready
        return [.send(encrypted)]
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
