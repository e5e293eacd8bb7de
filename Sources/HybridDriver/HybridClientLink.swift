import Foundation
import Hybrid
import HybridIO
import Proximity
import Synchronization

/// The computer's side of a QR-initiated hybrid session, over a radio and the environment's tunnels: it carries
/// out what its `HybridClientSession` decides (show the QR code, scan, open the tunnel the advert names, send,
/// time out) and hands CTAP requests through once the handshake is done.
public actor HybridClientLink {
    /// The authenticator's getInfo response (CBOR, no status byte), from the post-handshake message.
    public nonisolated let getInfo: [UInt8]
    /// Linking information the authenticator offered in its post-handshake message, verified.
    public nonisolated let linking: LinkingInfo?
    /// The session's Noise handshake hash (32 bytes), which the authenticator's side holds too: for a protocol in
    /// the tunnel that binds its messages to this session.
    public nonisolated let handshakeHash: [UInt8]
    private let driver: ClientDriver

    private init(driver: ClientDriver, getInfo: [UInt8], linking: LinkingInfo?, handshakeHash: [UInt8]) {
        self.driver = driver
        self.getInfo = getInfo
        self.linking = linking
        self.handshakeHash = handshakeHash
    }

    /// Runs a session up to the point where CTAP requests can be sent.
    ///
    /// - Parameters:
    ///   - requestType: what the QR code announces (`mc` for registration, `ga` for sign-in).
    ///   - scanner: the radio to listen on. It is started and stopped here, not closed.
    ///   - tunnelServer: replaces the relay host the advert names (self-hosted relays, tests).
    ///   - progress: called at each step the session reports, from any task.
    public static func connect(
        requestType: HybridRequestType,
        scanner: any ProximityScanner,
        tunnelServer: TunnelServerBaseURL? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(),
        offersLinking: Bool = false,
        environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridClientProgress) -> Void = { _ in }
    ) async throws(HybridLinkError) -> HybridClientLink {
        let session: HybridClientSession
        do throws(QRCodeError) {
            session = try HybridClientSession(
                qrKey: environment.sessionKey(), secret: environment.randomBytes(16),
                ephemeralKey: environment.sessionKey(), requestType: requestType,
                timestamp: UInt64(max(0, environment.currentDate().timeIntervalSince1970)),
                tunnelServer: tunnelServer, timeouts: timeouts, offersLinking: offersLinking)
        } catch {
            throw .qrCode(error)
        }
        return try await run(session, scanner: scanner, environment: environment, progress: progress)
    }

    /// Runs a linked session with a phone that sent `link` in an earlier session, up to the point where CTAP
    /// requests can be sent: the relay at `endpoint` wakes the phone (`/cable/contact`), its advert is matched with
    /// keys from the link secret and a fresh client nonce, and the NKpsk0 handshake uses its identity key. A relay
    /// that answers 410 throws `.tunnel(.refused(status: 410))`: the phone revoked the link.
    public static func connect(
        link: LinkingInfo,
        requestType: HybridRequestType,
        scanner: any ProximityScanner,
        endpoint: TunnelServerEndpoint,
        timeouts: HybridTimeouts = HybridTimeouts(),
        environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridClientProgress) -> Void = { _ in }
    ) async throws(HybridLinkError) -> HybridClientLink {
        let session: HybridClientSession
        do throws(LinkedSessionError) {
            session = try HybridClientSession(
                link: link, clientNonce: environment.randomBytes(ClientPayload.clientNonceLength),
                ephemeralKey: environment.sessionKey(), requestType: requestType, endpoint: endpoint,
                timeouts: timeouts)
        } catch {
            throw .linkedSession(error)
        }
        return try await run(session, scanner: scanner, environment: environment, progress: progress)
    }

    private static func run(
        _ session: consuming sending HybridClientSession, scanner: any ProximityScanner,
        environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridClientProgress) -> Void
    ) async throws(HybridLinkError) -> HybridClientLink {
        let driver = ClientDriver(
            session: session, scanner: scanner, environment: environment, progress: progress)
        guard case .ready(let getInfo, let linking) = try await driver.run(driver.start()),
            let handshakeHash = driver.handshakeHash
        else {
            throw .session(.tunnelClosed)
        }
        return HybridClientLink(driver: driver, getInfo: getInfo, linking: linking, handshakeHash: handshakeHash)
    }

    /// Sends one CTAP request (command byte and CBOR) and returns the answer (status byte and CBOR).
    public func request(_ ctapRequest: [UInt8]) async throws(HybridLinkError) -> [UInt8] {
        guard case .response(let response) = try await driver.run(driver.sendCTAP(ctapRequest)) else {
            throw .session(.tunnelClosed)
        }
        return response
    }

    /// Linking information the authenticator sent in an update message since the handshake, verified.
    public var updatedLinking: LinkingInfo? { driver.linkingUpdate }

    /// Ends the session: a shutdown message when the authenticator speaks revision 1, then close.
    public func close() async {
        _ = try? await driver.run(driver.shutdown())
    }
}

/// Carries out a `HybridClientSession`'s actions, one exhaustive `switch`, and feeds it what happens: adverts,
/// tunnel messages, the tunnel's end, the timer's expiry. Used by one task at a time (the link's actor).
final class ClientDriver {
    /// What the caller of `run(_:)` waits for.
    enum Outcome {
        case ready(getInfo: [UInt8], linking: LinkingInfo?)
        case response([UInt8])
        case closed
    }

    /// An advert from the radio, or the expiry of the timer armed while scanning (by generation).
    private enum ScanEvent: Sendable {
        case advert([UInt8])
        case timerExpired(generation: Int)
        /// The tunnel pump has an event: take it from the pump's task.
        case tunnelEvent
    }

    /// What the tunnel pump read: an event, or the error that ended the tunnel.
    private typealias Pumped = Result<TunnelEvent, TunnelError>

    /// Reads the tunnel while the radio scans (a linked session waits for the phone's advert with its contact tunnel
    /// open, and the relay may close it): short receives, so that it can be stopped between them without
    /// cancelling a receive, which would end the tunnel.
    private var pump: (task: Task<Pumped?, Never>, stop: StopFlag)?
    /// An event the pump read after the scan stopped, handed to the next tunnel read.
    private var pumped: Pumped?

    private var session: HybridClientSession
    private let scanner: any ProximityScanner
    private let environment: HybridEnvironment
    private let progress: @Sendable (HybridClientProgress) -> Void
    private var tunnel: (any HybridTunnel)?
    private var scan: (events: AsyncStream<ScanEvent>.AsyncIterator, sink: AsyncStream<ScanEvent>.Continuation)?
    private var timer: (deadline: ContinuousClock.Instant, generation: Int, sleeper: Task<Void, Never>?)?
    private var generation = 0
    private(set) var linkingUpdate: LinkingInfo?

    init(
        session: consuming HybridClientSession, scanner: any ProximityScanner, environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridClientProgress) -> Void
    ) {
        self.session = session
        self.scanner = scanner
        self.environment = environment
        self.progress = progress
    }

    var handshakeHash: [UInt8]? { session.handshakeHash }
    func start() -> [HybridClientSession.Action] { session.start() }
    func sendCTAP(_ request: [UInt8]) -> [HybridClientSession.Action] { session.sendCTAP(request) }
    func shutdown() -> [HybridClientSession.Action] { session.shutdown() }

    /// Carries out `actions` and then whatever the session asks next, until an outcome the caller waits for. When
    /// the waiting task is cancelled (the scan's events end, a tunnel receive fails), the radio, timer and tunnel are
    /// closed and `.cancelled` is thrown, whatever the step was.
    nonisolated(nonsending) func run(_ actions: [HybridClientSession.Action]) async throws(HybridLinkError)
        -> Outcome
    {
        var actions = actions
        do throws(HybridLinkError) {
            while true {
                if let outcome = try await perform(actions) { return outcome }
                guard let next = try await nextEvent() else {
                    if Task.isCancelled { throw HybridLinkError.cancelled }
                    return .closed
                }
                actions = next
            }
        } catch {
            guard Task.isCancelled else { throw error }
            await tearDown()
            throw .cancelled
        }
    }

    // MARK: Actions

    private nonisolated(nonsending) func perform(_ actions: [HybridClientSession.Action])
        async throws(HybridLinkError) -> Outcome?
    {
        var pending = actions[...]
        var outcome: Outcome? = nil
        while let action = pending.popFirst() {
            switch action {
            case .report(let event):
                progress(event)
            case .startScanning:
                try await startScanning()
            case .stopScanning:
                await stopScanning()
            case .connect(let url):
                do throws(TunnelError) {
                    tunnel = try await environment.openTunnel(url, session.timeouts.connect)
                } catch {
                    await tearDown()
                    throw .tunnel(error)
                }
                pending.append(contentsOf: session.tunnelConnected())
            case .contact(let url, let clientPayload):
                do throws(TunnelError) {
                    tunnel = try await environment.openTunnel(
                        url, headers: [(ClientPayload.headerName, clientPayload)], timeout: session.timeouts.connect)
                } catch {
                    await tearDown()
                    throw .tunnel(error)
                }
                pending.append(contentsOf: session.tunnelConnected())
            case .send(let message):
                do throws(TunnelError) {
                    try await tunnel?.send(message)
                } catch {
                    await tearDown()
                    throw .tunnel(error)
                }
            case .armTimer(let duration):
                arm(duration)
            case .cancelTimer:
                cancelTimer()
            case .ready(let getInfo, let linking):
                outcome = .ready(getInfo: getInfo, linking: linking)
            case .deliverCTAPResponse(let response):
                outcome = .response(response)
            case .linkingUpdate(let linking):
                linkingUpdate = linking
            case .close(let error):
                await tearDown()
                if let error { throw .session(error) }
                outcome = .closed
            }
        }
        return outcome
    }

    private nonisolated(nonsending) func startScanning() async throws(HybridLinkError) {
        let (events, sink) = AsyncStream.makeStream(of: ScanEvent.self, bufferingPolicy: .bufferingNewest(256))
        scan = (events.makeAsyncIterator(), sink)
        do throws(ProximityError) {
            try await scanner.startScanning { advertisingData in
                // Parsed like the HCI backend's reports; anything without a 20-byte caBLE advert is someone else's.
                if let advert = try? AdvertisingData(bytes: advertisingData).caBLEAdvert { sink.yield(.advert(advert)) }
            }
        } catch {
            scan = nil
            await tearDown()
            throw .radio(error)
        }
    }

    private nonisolated(nonsending) func stopScanning() async {
        guard let scan else { return }
        self.scan = nil
        scan.sink.finish()
        await scanner.stopScanning()
        if let pump {
            self.pump = nil
            pump.stop.set()
            if let event = await pump.task.value { pumped = event }
        }
    }

    /// Starts reading `tunnel` into the scan's events.
    private func startPump(_ tunnel: any HybridTunnel, sink: AsyncStream<ScanEvent>.Continuation) {
        let stop = StopFlag()
        let task = Task<Pumped?, Never> {
            while !stop.isSet {
                do throws(TunnelError) {
                    guard let message = try await tunnel.receive(timeout: .milliseconds(100)) else {
                        sink.yield(.tunnelEvent)
                        return .success(.closed)
                    }
                    sink.yield(.tunnelEvent)
                    return .success(.message(message))
                } catch {
                    if case .timedOut = error { continue }
                    sink.yield(.tunnelEvent)
                    return .failure(error)
                }
            }
            return nil
        }
        pump = (task, stop)
    }

    /// The session's answer to what the tunnel gave.
    private nonisolated(nonsending) func handle(_ pumped: Pumped) async throws(HybridLinkError)
        -> [HybridClientSession.Action]
    {
        switch pumped {
        case .success(.message(let message)): return session.received(message)
        case .success(.closed): return session.tunnelClosed()
        case .success(.timerExpired): return session.timerExpired()
        case .failure(let error):
            await tearDown()
            throw .tunnel(error)
        }
    }

    private func arm(_ duration: Duration) {
        cancelTimer()
        generation += 1
        let generation = generation
        var sleeper: Task<Void, Never>? = nil
        if let sink = scan?.sink {
            // While scanning, expiry arrives with the adverts; on the tunnel it is the receive's time limit.
            let sleep = environment.sleep
            sleeper = Task {
                guard (try? await sleep(duration)) != nil else { return }
                sink.yield(.timerExpired(generation: generation))
            }
        }
        timer = (environment.now() + duration, generation, sleeper)
    }

    private func cancelTimer() {
        timer?.sleeper?.cancel()
        timer = nil
    }

    private nonisolated(nonsending) func tearDown() async {
        cancelTimer()
        await stopScanning()
        await tunnel?.close()
        tunnel = nil
        pumped = nil
    }

    // MARK: Events

    /// Waits for what happens next and returns the session's answer to it; `nil` when nothing can happen any more
    /// (the session closed its tunnel and radio).
    private nonisolated(nonsending) func nextEvent() async throws(HybridLinkError) -> [HybridClientSession.Action]? {
        if let event = pumped {
            pumped = nil
            return try await handle(event)
        }
        if let tunnel, let sink = scan?.sink, pump == nil {
            // Scanning with the tunnel open (linked): the tunnel is read into the scan's events.
            startPump(tunnel, sink: sink)
        }
        if let tunnel, scan == nil {
            let event: TunnelEvent
            do throws(TunnelError) {
                event = try await tunnel.nextEvent(deadline: timer?.deadline, now: environment.now())
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
        while let event = await scan?.events.next(isolation: #isolation) {
            switch event {
            case .advert(let serviceData):
                let actions = session.advertReceived(serviceData)
                if !actions.isEmpty { return actions }
            case .timerExpired(let generation) where generation == timer?.generation:
                return session.timerExpired()
            case .timerExpired:
                continue  // a timer that was replaced or cancelled
            case .tunnelEvent:
                guard let pump else { continue }
                self.pump = nil
                guard let event = await pump.task.value else { continue }
                return try await handle(event)
            }
        }
        return nil
    }
}

/// A flag one task sets and another polls.
final class StopFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
