import Crypto
import Hybrid
import NIOSSL
import Proximity

/// Where an authenticator-side hybrid session is, for status lines.
public enum HybridAuthenticatorProgress: Hashable, Sendable {
    /// Opening `/cable/new/…` on the relay.
    case connecting(url: String)
    /// The relay registered the tunnel under this routing ID; the advert is on the air.
    case advertising(routingID: RoutingID)
    /// The client answered the advert: handshake done, getInfo sent.
    case handshakeDone
    /// A CTAP request arrived (command byte given).
    case requestReceived(command: UInt8)
    /// Its answer went out (CTAP status byte given).
    case responseSent(status: UInt8)
}

/// The phone's side of a QR-initiated hybrid session over real I/O: it registers a tunnel with the relay,
/// advertises the encrypted routing data, answers the handshake, and serves CTAP requests.
public enum HybridAuthenticator {
    /// Runs one session for a scanned QR code until the client ends it, or after the first CTAP exchange
    /// unless `keepOpen` (phones answer one request per QR code). Returns how many requests were answered.
    ///
    /// - Parameters:
    ///   - getInfo: the authenticator's getInfo response (CBOR, no status byte), sent after the handshake.
    ///   - advertiser: the radio to advertise on. It is started and stopped here, not closed.
    ///   - domain: the relay named in the advert. `tunnelServer` replaces its host for the connection itself.
    ///   - handle: answers one CTAP request (command byte and CBOR) with status byte and CBOR.
    public static func run(
        qrCode: QRCodePayload,
        getInfo: [UInt8],
        advertiser: any ProximityAdvertiser,
        domain: TunnelDomain = .google,
        tunnelServer: TunnelServerBaseURL? = nil,
        tls: TLSConfiguration? = nil,
        keepOpen: Bool = false,
        timeouts: HybridTimeouts = HybridTimeouts(),
        progress: @escaping @Sendable (HybridAuthenticatorProgress) -> Void = { _ in },
        handle: @Sendable ([UInt8]) async -> [UInt8]
    ) async throws(HybridTransportError) -> Int {
        var nonce = [UInt8](repeating: 0, count: AdvertPlaintext.nonceByteCount)
        var generator = SystemRandomNumberGenerator()
        for index in nonce.indices { nonce[index] = generator.next() }
        var session: HybridAuthenticatorSession
        do throws(AdvertError) {
            session = try HybridAuthenticatorSession(
                qrCode: qrCode, getInfo: getInfo,
                ephemeralKey: P256.KeyAgreement.PrivateKey.randomSessionKey(),
                advertNonce: nonce, domain: domain, tunnelServer: tunnelServer)
        } catch {
            throw .session(.protocolViolation("cannot build the advert: \(error)"))
        }

        // 1. Register the tunnel.
        var connectURL = ""
        for case .connect(let url) in session.start() { connectURL = url }
        progress(.connecting(url: connectURL))
        let tunnel: TunnelConnection
        do throws(TunnelError) {
            tunnel = try await TunnelConnection.connect(to: connectURL, timeout: timeouts.connect, tls: tls)
        } catch {
            throw .tunnel(error)
        }
        var advertising = false
        do throws(HybridTransportError) {
            guard let header = tunnel.routingIDHeader else { throw .badRoutingID("(missing)") }
            let routingID: RoutingID
            do throws(TunnelIdentifierError) {
                routingID = try RoutingID(hex: header)
            } catch {
                throw .badRoutingID(String(header.prefix(16)))
            }

            // 2. Advertise, and wait for the client's handshake.
            try await perform(session.tunnelConnected(routingID: routingID), tunnel, advertiser, &advertising)
            progress(.advertising(routingID: routingID))
            var answered = 0
            var handshakeDone = false
            while true {
                let message: [UInt8]?
                do throws(TunnelError) {
                    message = try await tunnel.receive(
                        timeout: handshakeDone ? timeouts.request : timeouts.handshake,
                        waitingFor: handshakeDone ? "waiting for a request from the client" : "waiting for the client")
                } catch {
                    if !handshakeDone, case .timedOut = error {
                        throw .clientNeverConnected(timeout: timeouts.handshake)
                    }
                    throw .tunnel(error)
                }
                guard let message else {
                    // The client (or relay) closed: normal once ready, an error before.
                    try await perform(session.tunnelClosed(), tunnel, advertiser, &advertising)
                    return answered
                }
                var request: [UInt8]? = nil
                let actions = session.received(message)
                for case .deliverCTAPRequest(let payload) in actions { request = payload }
                if !handshakeDone, session.phase == .ready {
                    handshakeDone = true
                    try await perform(actions, tunnel, advertiser, &advertising)
                    progress(.handshakeDone)
                    continue
                }
                try await perform(actions, tunnel, advertiser, &advertising)
                if session.phase == .closed { return answered }
                guard let request else { continue }
                progress(.requestReceived(command: request.first ?? 0))
                let response = await handle(request)
                try await perform(session.ctapResponse(response), tunnel, advertiser, &advertising)
                progress(.responseSent(status: response.first ?? 0xFF))
                answered += 1
                if !keepOpen {
                    await tunnel.close()
                    return answered
                }
            }
        } catch {
            if advertising { await advertiser.stopAdvertising() }
            await tunnel.close()
            throw error
        }
    }

    /// Carries out the session's actions. A `.close` with an error becomes the thrown error.
    private static func perform(
        _ actions: [HybridAuthenticatorSession.Action], _ tunnel: TunnelConnection,
        _ advertiser: any ProximityAdvertiser, _ advertising: inout Bool
    ) async throws(HybridTransportError) {
        for action in actions {
            switch action {
            case .advertise(let serviceData):
                do throws(ProximityError) {
                    let data: [UInt8]
                    do throws(AdvertisingDataError) {
                        data = try AdvertisingData.caBLE(advert: serviceData).bytes
                    } catch {
                        throw .failed("cannot build the advertising data: \(error)")
                    }
                    try await advertiser.startAdvertising(data)
                    advertising = true
                } catch {
                    throw .radio(error)
                }
            case .stopAdvertising:
                await advertiser.stopAdvertising()
                advertising = false
            case .send(let message):
                do throws(TunnelError) {
                    try await tunnel.send(message)
                } catch {
                    throw .tunnel(error)
                }
            case .close(let error):
                if advertising {
                    await advertiser.stopAdvertising()
                    advertising = false
                }
                await tunnel.close()
                if let error { throw .session(error) }
            case .connect, .deliverCTAPRequest:
                break
            }
        }
    }
}
