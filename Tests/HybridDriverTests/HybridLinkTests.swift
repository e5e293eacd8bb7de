import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import Proximity
import Synchronization
import TestSupport
import Testing

/// Both drivers over fake tunnels and a fake radio: no socket, and no waiting for time to pass.
struct HybridLinkTests {
    /// What the client reported, in order.
    final class Reports: Sendable {
        let events = Mutex<[HybridClientProgress]>([])
        let phoneEvents = Mutex<[HybridAuthenticatorProgress]>([])
        let (qrCodes, sink) = AsyncStream.makeStream(of: String.self)
    }

    /// A timer that never expires by itself (only cancellation ends it).
    static let never: @Sendable (Duration) async throws -> Void = { _ in
        // A stream that never yields ends its iteration only when the task is cancelled.
        let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
        for await _ in stream {}
        continuation.finish()  // keeps the stream's only continuation alive while it is awaited
        throw CancellationError()
    }

    static func environment(
        relay: FakeRelay, random: SeededBytes = SeededBytes(seed: 7),
        sleep: @escaping @Sendable (Duration) async throws -> Void = never
    ) -> HybridEnvironment {
        HybridEnvironment(
            openTunnel: { (url, _) async throws(TunnelError) -> any HybridTunnel in try relay.open(url) },
            randomBytes: { random($0) }, currentDate: { Date(timeIntervalSince1970: 1_800_000_000) },
            sleep: sleep)
    }

    static func authenticator() -> Authenticator {
        Authenticator(
            environment: AuthenticatorEnvironment(
                store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
    }

    static let timeouts = HybridTimeouts(all: .seconds(5))

    @Test func aQRSignInRunsEndToEndAndEachSideReportsItsSteps() async throws {
        let relay = FakeRelay()
        // Someone else's advert and a caBLE advert for another QR code are on the air too.
        let air = FakeAir(noise: [
            [0x02, 0x01, 0x06], try AdvertisingData.caBLE(advert: Array(repeating: 9, count: 20)).bytes,
        ])
        let reports = Reports()
        let phone = HybridAuthenticatorLink(
            advertiser: air, tunnelServer: try TunnelServerBaseURL(string: "ws://relay.test"), timeouts: Self.timeouts,
            keepOpen: true, environment: Self.environment(relay: relay, random: SeededBytes(seed: 99)),
            progress: { event in reports.phoneEvents.withLock { $0.append(event) } })
        let authenticator = Self.authenticator()
        let served = Task {
            var iterator = reports.qrCodes.makeAsyncIterator()
            guard let url = await iterator.next() else { return -1 }
            return try await phone.serve(qrCode: try QRCodePayload(url: url), authenticator: authenticator)
        }
        let link = try await HybridClientLink.connect(
            requestType: .getAssertion, scanner: air, tunnelServer: try TunnelServerBaseURL(string: "ws://relay.test"),
            timeouts: Self.timeouts, environment: Self.environment(relay: relay),
            progress: { event in
                if case .showQRCode(let url) = event { reports.sink.yield(url) }
                reports.events.withLock { $0.append(event) }
            })
        let getInfo = try await link.request([CTAPCommand.getInfo.rawValue])
        #expect(getInfo.first == 0x00)
        #expect(Array(getInfo.dropFirst()) == link.getInfo)
        #expect(try await link.request([CTAPCommand.getInfo.rawValue]) == getInfo)
        await link.close()
        #expect(try await served.value == 2)

        let events = reports.events.withLock { $0 }
        #expect(events.count == 8)
        guard events.count == 8, case .showQRCode = events[0], case .advertSeen(let routingID, _) = events[1],
            case .tunnelConnected(let url) = events[2]
        else {
            Issue.record("unexpected reports \(events)")
            return
        }
        #expect(routingID.description.uppercased() == "0A0B0C")
        #expect(url.hasPrefix("ws://relay.test/cable/connect/0A0B0C/"))
        #expect(
            Array(events[3...]) == [
                .handshakeDone, .requestSent(command: 4), .responseReceived(status: 0), .requestSent(command: 4),
                .responseReceived(status: 0),
            ])
        let phoneEvents = reports.phoneEvents.withLock { $0 }
        #expect(phoneEvents.count == 7)
        #expect(
            phoneEvents.suffix(5) == [
                .handshakeDone, .requestReceived(command: 4), .responseSent(status: 0), .requestReceived(command: 4),
                .responseSent(status: 0),
            ])
        #expect(relay.opened.count == 2)
        #expect(!air.isAdvertising && !air.isScanning)
    }

    @Test func withoutANearbyAdvertTheClientTimesOutAndNeverContactsTheRelay() async throws {
        let relay = FakeRelay()
        let air = FakeAir(noise: [])
        let expired = Mutex<[Duration]>([])
        do {
            _ = try await HybridClientLink.connect(
                requestType: .getAssertion, scanner: air, timeouts: HybridTimeouts(all: .seconds(3)),
                environment: Self.environment(relay: relay) { duration in expired.withLock { $0.append(duration) } })
            Issue.record("connected without an advert")
        } catch {
            #expect(error == .session(.noNearbyAuthenticator(timeout: .seconds(3))))
        }
        #expect(expired.withLock { $0 } == [.seconds(3)])
        #expect(relay.opened.isEmpty)
        #expect(!air.isScanning)
    }

    @Test func aPhoneNobodyAnswersStopsAdvertisingAndClosesItsTunnel() async throws {
        let tunnel = FakeTunnel(routingIDHeader: "010203", timersExpireAtOnce: true)
        let air = FakeAir()
        let environment = HybridEnvironment(
            openTunnel: { (_, _) async throws(TunnelError) -> any HybridTunnel in tunnel },
            randomBytes: { SeededBytes(seed: 1)($0) })
        let phone = HybridAuthenticatorLink(
            advertiser: air, timeouts: HybridTimeouts(all: .seconds(4)), environment: environment)
        let qrCode = try Self.qrCode()
        do {
            _ = try await phone.serve(qrCode: qrCode, authenticator: Self.authenticator())
            Issue.record("served without a client")
        } catch {
            #expect(error == .session(.clientNeverConnected(timeout: .seconds(4))))
        }
        #expect(air.advertisingStarts == 1 && !air.isAdvertising)
        #expect(tunnel.isClosed)
        #expect(tunnel.receiveLimits.count == 1 && tunnel.receiveLimits[0]! <= .seconds(4))
    }

    @Test(arguments: [nil, "0A0B", "not hex"])
    func aBadRoutingIDHeaderStopsThePhoneBeforeItAdvertises(header: String?) async throws {
        let tunnel = FakeTunnel(routingIDHeader: header)
        let air = FakeAir()
        let phone = HybridAuthenticatorLink(
            advertiser: air,
            environment: HybridEnvironment(openTunnel: { (_, _) async throws(TunnelError) -> any HybridTunnel in tunnel
            }))
        let qrCode = try Self.qrCode()
        do {
            _ = try await phone.serve(qrCode: qrCode, authenticator: Self.authenticator())
            Issue.record("served with routing ID header \(String(describing: header))")
        } catch {
            #expect(error == .session(.badRoutingID(header)))
        }
        #expect(air.advertisingStarts == 0)
        #expect(tunnel.isClosed && tunnel.sentCount == 0)
    }

    @Test func aRelayThatRefusesTheTunnelEndsTheClientAndStopsItsRadio() async throws {
        let air = FakeAir()
        let reports = Reports()
        // The phone advertises a routing ID the fake relay does not know: the client's connect is refused.
        let phone = HybridAuthenticatorLink(
            advertiser: air, timeouts: Self.timeouts,
            environment: Self.environment(relay: FakeRelay(routingIDHeader: "0D0E0F")))
        let phoneTask = Task {
            var iterator = reports.qrCodes.makeAsyncIterator()
            guard let url = await iterator.next() else { return }
            _ = try? await phone.serve(qrCode: try QRCodePayload(url: url), authenticator: Self.authenticator())
        }
        let relay = FakeRelay()
        do {
            _ = try await HybridClientLink.connect(
                requestType: .makeCredential, scanner: air, timeouts: Self.timeouts,
                environment: Self.environment(relay: relay),
                progress: { event in if case .showQRCode(let url) = event { reports.sink.yield(url) } })
            Issue.record("connected through a relay that refused")
        } catch {
            #expect(error == .tunnel(.refused(status: 404)))
        }
        #expect(!air.isScanning)
        phoneTask.cancel()
        reports.sink.finish()
    }

    @Test func theInjectedRandomSourceAndDateMakeTheQRCode() async throws {
        func qrURL(seed: UInt64) async throws -> String {
            let shown = Mutex<String?>(nil)
            _ = try? await HybridClientLink.connect(
                requestType: .getAssertion, scanner: FakeAir(), timeouts: HybridTimeouts(all: .seconds(1)),
                environment: Self.environment(relay: FakeRelay(), random: SeededBytes(seed: seed)) { _ in },
                progress: { event in if case .showQRCode(let url) = event { shown.withLock { $0 = url } } })
            return try #require(shown.withLock { $0 })
        }
        let first = try await qrURL(seed: 5)
        #expect(try await qrURL(seed: 5) == first)
        #expect(try await qrURL(seed: 6) != first)
        #expect(try QRCodePayload(url: first).timestamp == 1_800_000_000)
    }

    static func qrCode() throws -> QRCodePayload {
        let session = try HybridClientSession(
            qrKey: P256.KeyAgreement.PrivateKey(), secret: [UInt8](repeating: 3, count: 16),
            ephemeralKey: P256.KeyAgreement.PrivateKey(),
            requestType: .getAssertion, timestamp: 0)
        guard let qrCode = session.qrCode else { throw QRCodeError.missingPrefix }
        return qrCode
    }
}

/// The listener's reconnection waits: exponential, capped, jittered within [d/2, d], reset after a success.
struct ReconnectBackoffTests {
    @Test func waitsGrowDoubleAreCappedAndJittered() {
        var backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(8))
        let lows = (0..<6).map { _ in backoff.next(unitRandom: 0) }
        #expect(lows == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
        backoff.reset()
        let highs = (0..<5).map { _ in backoff.next(unitRandom: 0.999_999) }
        for (wait, ceiling) in zip(highs, [1, 2, 4, 8, 8]) {
            #expect(wait <= .seconds(ceiling) && wait > .seconds(ceiling) * 0.99)
        }
        // Out-of-range draws are clamped.
        backoff.reset()
        #expect(backoff.next(unitRandom: -3) == .milliseconds(500))
        #expect(backoff.next(unitRandom: 7) == .seconds(2))
    }
}
