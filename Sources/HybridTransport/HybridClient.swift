import Crypto
import Foundation
import Hybrid
import NIOSSL
import Proximity

/// Where a client-side hybrid session is, for status lines.
public enum HybridClientProgress: Hashable, Sendable {
    /// Show this `FIDO:/` URL as a QR code; the radio is scanning.
    case showQRCode(url: String)
    /// An advert for this QR code arrived: the authenticator is near and named its relay.
    case advertSeen(routingID: RoutingID, domain: TunnelDomain)
    /// The tunnel to the relay is open (`url` without secrets: the tunnel ID is derived from the QR secret but
    /// reveals nothing about it).
    case tunnelConnected(url: String)
    /// The Noise handshake finished and the authenticator's getInfo arrived.
    case handshakeDone
    /// A CTAP request went out (command byte given).
    case requestSent(command: UInt8)
    /// Its answer came back (CTAP status byte given).
    case responseReceived(status: UInt8)
}

/// The computer's side of a QR-initiated hybrid session over real I/O: it shows a QR code, scans for the
/// authenticator's advert, opens the tunnel the advert names, runs the handshake, and then carries CTAP requests.
public enum HybridClient {
    /// Runs a session up to the point where CTAP requests can be sent.
    ///
    /// - Parameters:
    ///   - requestType: what the QR code announces (`mc` for registration, `ga` for sign-in).
    ///   - scanner: the radio to listen on. It is started and stopped here, not closed.
    ///   - tunnelServer: replaces the relay host the advert names (self-hosted relays, tests).
    ///   - tls: trust settings for a `wss://` relay; `nil` uses the system's.
    ///   - progress: called at each step, from any task.
    public static func connect(
        requestType: HybridRequestType,
        scanner: any ProximityScanner,
        tunnelServer: TunnelServerBaseURL? = nil,
        tls: TLSConfiguration? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(),
        progress: @escaping @Sendable (HybridClientProgress) -> Void = { _ in }
    ) async throws(HybridTransportError) -> HybridClientConnection {
        var secret = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in secret.indices { secret[index] = generator.next() }
        var session: HybridClientSession
        do throws(QRCodeError) {
            session = try HybridClientSession(
                qrKey: P256.KeyAgreement.PrivateKey.randomSessionKey(),
                secret: secret,
                ephemeralKey: P256.KeyAgreement.PrivateKey.randomSessionKey(),
                requestType: requestType,
                timestamp: UInt64(max(0, Date().timeIntervalSince1970)),
                tunnelServer: tunnelServer)
        } catch {
            throw .qrCode(error)
        }

        // 1. Show the QR code and listen for the advert.
        _ = session.start()
        let (adverts, sink) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
        do throws(ProximityError) {
            try await scanner.startScanning { advertisingData in
                // Parsed like the HCI backend's reports; anything without a 20-byte caBLE advert is someone else's.
                if let advert = try? AdvertisingData(bytes: advertisingData).caBLEAdvert { sink.yield(advert) }
            }
        } catch {
            throw .radio(error)
        }
        progress(.showQRCode(url: session.qrCode.url))
        let deadline = Task {
            try? await Task.sleep(for: timeouts.advert)
            sink.finish()
        }
        var connectURL: String? = nil
        for await advert in adverts {
            for action in session.advertReceived(advert) {
                if case .connect(let url) = action { connectURL = url }
            }
            if connectURL != nil { break }
        }
        deadline.cancel()
        sink.finish()
        await scanner.stopScanning()
        guard let connectURL, let matched = session.matchedAdvert else {
            throw .noNearbyAuthenticator(timeout: timeouts.advert)
        }
        progress(.advertSeen(routingID: matched.routingID, domain: matched.domain))

        // 2. Open the tunnel and send the first handshake message.
        let tunnel: TunnelConnection
        do throws(TunnelError) {
            tunnel = try await TunnelConnection.connect(to: connectURL, timeout: timeouts.connect, tls: tls)
        } catch {
            throw .tunnel(error)
        }
        progress(.tunnelConnected(url: connectURL))
        do throws(HybridTransportError) {
            try await perform(session.tunnelConnected(), on: tunnel)
            // 3. Handshake answer, then the post-handshake message with getInfo.
            while true {
                let message: [UInt8]?
                do throws(TunnelError) {
                    message = try await tunnel.receive(
                        timeout: timeouts.handshake, waitingFor: "waiting for the authenticator's handshake")
                } catch {
                    throw .tunnel(error)
                }
                guard let message else {
                    try await perform(session.tunnelClosed(), on: tunnel)
                    throw .session(.tunnelClosed)
                }
                let actions = session.received(message)
                try await perform(actions, on: tunnel)
                for action in actions {
                    if case .ready(let getInfo, let linking) = action {
                        progress(.handshakeDone)
                        return HybridClientConnection(
                            session: session, tunnel: tunnel, getInfo: getInfo, linking: linking,
                            timeouts: timeouts, progress: progress)
                    }
                }
            }
        } catch {
            await tunnel.close()
            throw error
        }
    }

    /// Sends what the session asks to send; a `.close` with an error becomes the thrown error.
    static func perform(_ actions: [HybridClientSession.Action], on tunnel: TunnelConnection)
        async throws(HybridTransportError)
    {
        for action in actions {
            switch action {
            case .send(let message):
                do throws(TunnelError) {
                    try await tunnel.send(message)
                } catch {
                    throw .tunnel(error)
                }
            case .close(let error):
                await tunnel.close()
                if let error { throw .session(error) }
            case .startScanning, .stopScanning, .connect, .ready, .deliverCTAPResponse, .linkingUpdate:
                break
            }
        }
    }
}

/// An open hybrid session on the client side: CTAP requests in, responses out, end to end encrypted.
public actor HybridClientConnection {
    private var session: HybridClientSession
    private let tunnel: TunnelConnection
    private let timeouts: HybridTimeouts
    private let progress: @Sendable (HybridClientProgress) -> Void
    /// The authenticator's getInfo response (CBOR, no status byte), from the post-handshake message.
    public nonisolated let getInfo: [UInt8]
    /// Linking information the authenticator offered, verified.
    public nonisolated let linking: LinkingInfo?

    init(
        session: consuming HybridClientSession, tunnel: TunnelConnection, getInfo: [UInt8], linking: LinkingInfo?,
        timeouts: HybridTimeouts, progress: @escaping @Sendable (HybridClientProgress) -> Void
    ) {
        self.session = session
        self.tunnel = tunnel
        self.getInfo = getInfo
        self.linking = linking
        self.timeouts = timeouts
        self.progress = progress
    }

    /// Sends one CTAP request (command byte and CBOR) and returns the answer (status byte and CBOR).
    public func request(_ ctapRequest: [UInt8]) async throws(HybridTransportError) -> [UInt8] {
        try await HybridClient.perform(session.sendCTAP(ctapRequest), on: tunnel)
        progress(.requestSent(command: ctapRequest.first ?? 0))
        while true {
            let message: [UInt8]?
            do throws(TunnelError) {
                message = try await tunnel.receive(
                    timeout: timeouts.request, waitingFor: "waiting for the authenticator's answer")
            } catch {
                _ = session.shutdown()
                await tunnel.close()
                throw .tunnel(error)
            }
            guard let message else {
                try await HybridClient.perform(session.tunnelClosed(), on: tunnel)
                throw .session(.tunnelClosed)
            }
            let actions = session.received(message)
            try await HybridClient.perform(actions, on: tunnel)
            for action in actions {
                if case .deliverCTAPResponse(let response) = action {
                    progress(.responseReceived(status: response.first ?? 0xFF))
                    return response
                }
            }
        }
    }

    /// Ends the session: a shutdown message when the authenticator speaks revision 1, then close.
    public func close() async {
        try? await HybridClient.perform(session.shutdown(), on: tunnel)
        await tunnel.close()
    }
}
