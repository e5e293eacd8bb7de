import CTAP2
import Crypto
import Hybrid
import HybridIO
import Proximity

/// The phone's side of a QR-initiated hybrid session, over a radio and the environment's tunnels: it carries out
/// what its `HybridAuthenticatorSession` decides (open `/cable/new`, advertise, answer the handshake, time out,
/// stay open or not) and passes each CTAP request to `handle`.
public struct HybridAuthenticatorLink: Sendable {
    public var advertiser: any ProximityAdvertiser
    public var domain: TunnelDomain
    public var tunnelServer: TunnelServerBaseURL?
    public var timeouts: HybridTimeouts
    public var keepOpen: Bool
    public var environment: HybridEnvironment
    public var progress: @Sendable (HybridAuthenticatorProgress) -> Void

    /// - Parameters:
    ///   - advertiser: the radio to advertise on. It is started and stopped here, not closed.
    ///   - domain: the relay named in the advert. `tunnelServer` replaces its host for the connection itself.
    ///   - keepOpen: serve requests until the client ends the session (phones answer one request per QR code).
    public init(
        advertiser: any ProximityAdvertiser,
        domain: TunnelDomain = .google,
        tunnelServer: TunnelServerBaseURL? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(),
        keepOpen: Bool = false,
        environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridAuthenticatorProgress) -> Void = { _ in }
    ) {
        self.advertiser = advertiser
        self.domain = domain
        self.tunnelServer = tunnelServer
        self.timeouts = timeouts
        self.keepOpen = keepOpen
        self.environment = environment
        self.progress = progress
    }

    /// Serves the session a scanned QR code asks for with this package's CTAP2 `Authenticator`. Returns how many
    /// requests were answered.
    public func serve(qrCode: QRCodePayload, authenticator: Authenticator) async throws(HybridLinkError) -> Int {
        // getInfo goes in the post-handshake message without its status byte.
        let getInfo = Array(await authenticator.handle([CTAPCommand.getInfo.rawValue]).dropFirst())
        return try await serve(qrCode: qrCode, getInfo: getInfo) { request in await authenticator.handle(request) }
    }

    /// Serves the session a scanned QR code asks for until the client ends it, or after the first CTAP exchange
    /// unless `keepOpen`. Returns how many requests were answered.
    ///
    /// - Parameters:
    ///   - getInfo: the authenticator's getInfo response (CBOR, no status byte), sent after the handshake.
    ///   - handle: answers one CTAP request (command byte and CBOR) with status byte and CBOR.
    public func serve(
        qrCode: QRCodePayload, getInfo: [UInt8], handle: @Sendable ([UInt8]) async -> [UInt8]
    ) async throws(HybridLinkError) -> Int {
        try await serve(qrCode: qrCode, getInfo: getInfo, linkingOffer: nil) { request, _ in await handle(request) }
            .answered
    }

    /// As `serve(qrCode:getInfo:handle:)`, for a protocol carried in the tunnel instead of CTAP: `answer` also gets
    /// the session's Noise handshake hash (32 bytes, the client holds the same), so that the protocol can bind its
    /// own messages to this session.
    public func serve(
        qrCode: QRCodePayload, getInfo: [UInt8],
        answer: @Sendable (_ request: [UInt8], _ handshakeHash: [UInt8]) async -> [UInt8]
    ) async throws(HybridLinkError) -> Int {
        try await serve(qrCode: qrCode, getInfo: getInfo, linkingOffer: nil, answer: answer).answered
    }

    /// Serves a scanned QR code's session and, when the QR code says the client can store linking information
    /// (key 4), offers `linkingOffer` in the post-handshake message. Returns how many requests were answered and
    /// whether the linking information was sent (the phone keeps the link only then).
    public func serve(qrCode: QRCodePayload, authenticator: Authenticator, linkingOffer: LinkingOffer?)
        async throws(HybridLinkError) -> (answered: Int, sentLinking: Bool)
    {
        let getInfo = Array(await authenticator.handle([CTAPCommand.getInfo.rawValue]).dropFirst())
        return try await serve(qrCode: qrCode, getInfo: getInfo, linkingOffer: linkingOffer) { request, _ in
            await authenticator.handle(request)
        }
    }

    func serve(
        qrCode: QRCodePayload, getInfo: [UInt8], linkingOffer: LinkingOffer?,
        answer: @Sendable ([UInt8], [UInt8]) async -> [UInt8]
    ) async throws(HybridLinkError) -> (answered: Int, sentLinking: Bool) {
        let session: HybridAuthenticatorSession
        do throws(AdvertError) {
            session = try HybridAuthenticatorSession(
                qrCode: qrCode, getInfo: getInfo, ephemeralKey: environment.sessionKey(),
                advertNonce: environment.randomBytes(AdvertPlaintext.nonceByteCount), domain: domain,
                tunnelServer: tunnelServer, keepOpen: keepOpen, timeouts: timeouts, linkingOffer: linkingOffer)
        } catch {
            throw .session(.protocolViolation(.unbuildableAdvert(error)))
        }
        return try await run(session, answer: answer)
    }

    /// Serves a linked client after the relay woke this phone (`passkey listen`): joins the tunnel the wake names
    /// on `tunnelServer`, advertises under the link's keys, answers the NKpsk0 handshake with `identityKey`, then
    /// CTAP requests with `authenticator`. Returns how many requests were answered.
    public func serveLinked(
        routingID: RoutingID, tunnelID: TunnelID, clientPayload: ClientPayload, linkSecret: [UInt8],
        identityKey: P256.KeyAgreement.PrivateKey, authenticator: Authenticator
    ) async throws(HybridLinkError) -> Int {
        let getInfo = Array(await authenticator.handle([CTAPCommand.getInfo.rawValue]).dropFirst())
        let session: HybridAuthenticatorSession
        do throws(AdvertError) {
            session = try HybridAuthenticatorSession(
                linkedWake: routingID, tunnelID: tunnelID, clientPayload: clientPayload, linkSecret: linkSecret,
                identityKey: identityKey, getInfo: getInfo, ephemeralKey: environment.sessionKey(),
                advertRandom: environment.randomBytes(AdvertPlaintext.byteCount - 1), tunnelServer: tunnelServer,
                keepOpen: keepOpen, timeouts: timeouts)
        } catch {
            throw .session(.protocolViolation(.unbuildableAdvert(error)))
        }
        return try await run(session) { request, _ in await authenticator.handle(request) }.answered
    }

    private func run(
        _ session: consuming HybridAuthenticatorSession, answer: @Sendable ([UInt8], [UInt8]) async -> [UInt8]
    ) async throws(HybridLinkError) -> (answered: Int, sentLinking: Bool) {
        var session = session
        var run = AuthenticatorRun(advertiser: advertiser, environment: environment, progress: progress)
        var actions = session.start()
        while let next = try await run.perform(actions, on: &session, answer: answer) {
            actions = next
        }
        return (session.answeredRequests, session.sentLinking)
    }
}

/// Carries out a `HybridAuthenticatorSession`'s actions, one exhaustive `switch`, and feeds it what happens: the
/// tunnel opening, tunnel messages, the tunnel's end, the timer's expiry, the authenticator's answers.
struct AuthenticatorRun {
    let advertiser: any ProximityAdvertiser
    let environment: HybridEnvironment
    let progress: @Sendable (HybridAuthenticatorProgress) -> Void
    private var tunnel: (any HybridTunnel)?
    private var advertising = false
    private var deadline: ContinuousClock.Instant?
    private var closed = false

    init(
        advertiser: any ProximityAdvertiser, environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridAuthenticatorProgress) -> Void
    ) {
        self.advertiser = advertiser
        self.environment = environment
        self.progress = progress
    }

    /// Carries out `actions`, then waits for the next event and returns the session's answer to it; `nil` once
    /// the session has closed.
    mutating func perform(
        _ actions: [HybridAuthenticatorSession.Action], on session: inout HybridAuthenticatorSession,
        answer: @Sendable (_ request: [UInt8], _ handshakeHash: [UInt8]) async -> [UInt8]
    ) async throws(HybridLinkError) -> [HybridAuthenticatorSession.Action]? {
        var pending = actions[...]
        while let action = pending.popFirst() {
            switch action {
            case .report(let event):
                progress(event)
            case .connect(let url):
                do throws(TunnelError) {
                    let opened = try await environment.openTunnel(url, session.timeouts.connect)
                    tunnel = opened
                    pending.append(contentsOf: session.tunnelConnected(routingIDHeader: opened.routingIDHeader))
                } catch {
                    await tearDown()
                    throw .tunnel(error)
                }
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
                    await tearDown()
                    throw .radio(error)
                }
            case .stopAdvertising:
                await stopAdvertising()
            case .send(let message):
                do throws(TunnelError) {
                    try await tunnel?.send(message)
                } catch {
                    await tearDown()
                    throw .tunnel(error)
                }
            case .armTimer(let duration):
                deadline = environment.now() + duration
            case .cancelTimer:
                deadline = nil
            case .deliverCTAPRequest(let request):
                let handshakeHash = session.handshakeHash ?? []
                pending.append(contentsOf: session.ctapResponse(await answer(request, handshakeHash)))
            case .close(let error):
                await tearDown()
                if let error { throw .session(error) }
            }
        }
        return try await nextEvent(session: &session)
    }

    private mutating func nextEvent(
        session: inout HybridAuthenticatorSession
    ) async throws(HybridLinkError) -> [HybridAuthenticatorSession.Action]? {
        guard let tunnel, !closed else { return nil }
        let event: TunnelEvent
        do throws(TunnelError) {
            event = try await tunnel.nextEvent(deadline: deadline, now: environment.now())
        } catch {
            await tearDown()
            throw .tunnel(error)
        }
        switch event {
        case .message(let message): return session.received(message)
        case .closed: return session.tunnelClosed()
        case .timerExpired: return session.timerExpired()
        }
    }

    private mutating func stopAdvertising() async {
        guard advertising else { return }
        advertising = false
        await advertiser.stopAdvertising()
    }

    private mutating func tearDown() async {
        closed = true
        deadline = nil
        await stopAdvertising()
        await tunnel?.close()
        tunnel = nil
    }
}
