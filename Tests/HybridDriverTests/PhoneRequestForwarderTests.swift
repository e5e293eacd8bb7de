import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import HybridTestSupport
import Proximity
import Synchronization
import TestSupport
import Testing
import WebAuthnClient
import WebAuthnClientDriver

/// A security key's request forwarded to a phone over hybrid (issue 25): the bytes pass unchanged both ways, and a
/// cancelled or failed request leaves no radio scanning and no tunnel open.
@Suite(.timeLimit(.minutes(1)))
struct PhoneRequestForwarderTests {
    /// The client's side: a phone reached by QR code over the fake air and relay, with every tunnel it opened.
    final class Client: Sendable {
        let relay = FakeRelay()
        let air = FakeAir()
        let tunnels = Mutex<[FakeTunnel]>([])
        /// The phone's end of each tunnel.
        let phoneTunnels = Mutex<[FakeTunnel]>([])
        /// Every QR code shown, in order; the phone task takes them from `qrCodes`.
        let shown = Mutex<[String]>([])
        let (qrCodes, sink) = AsyncStream.makeStream(of: String.self)

        func phone(sleep: @escaping @Sendable (Duration) async throws -> Void = HybridLinkTests.never)
            throws -> HybridPhoneAuthenticator
        {
            let environment = environment(seed: 7, sleep: sleep) { tunnel in self.tunnels.withLock { $0.append(tunnel) }
            }
            return HybridPhoneAuthenticator(
                makeScanner: { self.air }, tunnelServer: try TunnelServerBaseURL(string: "ws://relay.test"),
                timeouts: HybridLinkTests.timeouts, environment: environment,
                progress: { event in
                    // Only the QR code matters here; the session's other steps are ignored.
                    if case .showQRCode(let url) = event {
                        self.shown.withLock { $0.append(url) }
                        self.sink.yield(url)
                    }
                })
        }

        /// The relay and clock of one side; `record` gets every tunnel it opens.
        func environment(
            seed: UInt64, sleep: @escaping @Sendable (Duration) async throws -> Void = HybridLinkTests.never,
            record: @escaping @Sendable (FakeTunnel) -> Void
        ) -> HybridEnvironment {
            let random = SeededBytes(seed: seed)
            return HybridEnvironment(
                openTunnel: { (url, _) async throws(TunnelError) -> any HybridTunnel in
                    let tunnel = try self.relay.open(url)
                    if let fake = tunnel as? FakeTunnel { record(fake) }
                    return tunnel
                },
                randomBytes: { random($0) }, currentDate: { Date(timeIntervalSince1970: 1_800_000_000) }, sleep: sleep)
        }

        /// Serves the next QR code as a phone whose every answer is `handle`'s.
        func servePhone(handle: @escaping @Sendable ([UInt8]) async -> [UInt8]) -> Task<Int, any Error> {
            let environment = environment(seed: 99) { tunnel in self.phoneTunnels.withLock { $0.append(tunnel) } }
            let phone = HybridAuthenticatorLink(
                advertiser: air, tunnelServer: try? TunnelServerBaseURL(string: "ws://relay.test"),
                timeouts: HybridLinkTests.timeouts, environment: environment, progress: { _ in })
            let qrCodes = qrCodes
            return Task {
                var iterator = qrCodes.makeAsyncIterator()
                guard let url = await iterator.next() else { return -1 }
                let getInfo = Array(
                    await HybridLinkTests.authenticator().handle([CTAPCommand.getInfo.rawValue]).dropFirst())
                return try await phone.serve(qrCode: try QRCodePayload(url: url), getInfo: getInfo, handle: handle)
            }
        }
    }

    /// A makeCredential in non-canonical CBOR (keys out of order, an unknown key 0x0B), and an answer the phone
    /// makes up: keys out of order, an unknown top-level key 0x0A and an authData the bridge never looks at.
    static let request: [UInt8] =
        [CTAPCommand.makeCredential.rawValue, 0xA3, 0x0B, 0x41, 0x07, 0x02, 0x61, 0x78, 0x01, 0x58, 0x20]
        + [UInt8](repeating: 0xCD, count: 32)
    static let answer: [UInt8] =
        [0x00, 0xA3, 0x0A, 0x42, 0x01, 0x02, 0x02, 0x45, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x01, 0x64] + Array("none".utf8)

    @Test func theRequestReachesThePhoneAndItsAnswerComesBackByteForByte() async throws {
        let client = Client()
        let received = Mutex<[[UInt8]]>([])
        let served = client.servePhone { request in
            received.withLock { $0.append(request) }
            return Self.answer
        }
        let answer = try await PhoneRequestForwarder.forward(Self.request, via: try client.phone())
        #expect(answer == Self.answer)
        #expect(received.withLock { $0 } == [Self.request])
        #expect(try await served.value == 1)
        #expect(!client.air.isScanning && !client.air.isAdvertising)
        #expect(client.tunnels.withLock { $0 }.allSatisfy { $0.isClosed })
    }

    @Test(arguments: [
        (CTAPCommand.makeCredential.rawValue, HybridRequestType.makeCredential),
        (CTAPCommand.getAssertion.rawValue, .getAssertion), (CTAPCommand.getInfo.rawValue, .getAssertion),
    ])
    func aMakeCredentialShowsARegistrationQRCodeAndAnythingElseASignIn(command: UInt8, shown: HybridRequestType)
        async throws
    {
        let client = Client()
        let served = client.servePhone { _ in [0x00, 0xA0] }
        let answer = try await PhoneRequestForwarder.forward(
            [command] + Self.request.dropFirst(), via: try client.phone())
        #expect(answer == [0x00, 0xA0])
        #expect(try await served.value == 1)
        let url = try #require(client.shown.withLock { $0 }.first)
        #expect(try QRCodePayload(url: url).requestType == shown)
    }

    @Test func cancellingWhileTheQRCodeIsUpStopsTheRadio() async throws {
        let client = Client()
        let phone = try client.phone()
        let forwarding = Task { try await PhoneRequestForwarder.forward(Self.request, via: phone) }
        var urls = client.qrCodes.makeAsyncIterator()
        #expect(await urls.next() != nil)
        #expect(client.air.isScanning)
        forwarding.cancel()
        await #expect(throws: AuthenticatorTransportError.self) { try await forwarding.value }
        #expect(!client.air.isScanning)
        #expect(client.relay.opened.isEmpty)
    }

    @Test func cancellingWhileThePhoneIsAnsweringClosesTheTunnel() async throws {
        let client = Client()
        let asked = AsyncStream.makeStream(of: Void.self)
        let served = client.servePhone { _ in
            asked.continuation.yield()
            // A phone that never answers: only the end of the test (cancellation) ends this.
            let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
            for await _ in stream {}
            continuation.finish()
            return [0x00]
        }
        let phone = try client.phone()
        let forwarding = Task { try await PhoneRequestForwarder.forward(Self.request, via: phone) }
        var waits = asked.stream.makeAsyncIterator()
        await waits.next()
        forwarding.cancel()
        await #expect(throws: AuthenticatorTransportError.self) { try await forwarding.value }
        #expect(!client.air.isScanning)
        #expect(!client.tunnels.withLock { $0 }.isEmpty)
        #expect(client.tunnels.withLock { $0 }.allSatisfy { $0.isClosed })
        served.cancel()
        _ = try? await served.value
    }

    @Test func aPhoneThatNeverAdvertisesTimesOutWithTheRadioStopped() async throws {
        let client = Client()
        // Every timer expires at once: the advert timeout passes as soon as it is armed.
        let phone = try client.phone(sleep: { _ in })
        do {
            _ = try await PhoneRequestForwarder.forward(Self.request, via: phone)
            Issue.record("a phone that never advertised answered")
        } catch {
            #expect(error.description.hasPrefix("no nearby authenticator answered"), "\(error)")
        }
        #expect(!client.air.isScanning)
        #expect(client.relay.opened.isEmpty)
    }

    @Test func aPhoneThatClosesTheTunnelMidRequestIsAnErrorWithNothingLeftOpen() async throws {
        let client = Client()
        let served = client.servePhone { _ in
            // The phone goes away in the middle of the request: its end of the tunnel closes.
            for tunnel in client.phoneTunnels.withLock({ $0 }) { await tunnel.close() }
            return [0x00]
        }
        let phone = try client.phone()
        await #expect(throws: AuthenticatorTransportError.self) {
            try await PhoneRequestForwarder.forward(Self.request, via: phone)
        }
        _ = try? await served.value
        #expect(!client.air.isScanning)
        #expect(client.tunnels.withLock { $0 }.allSatisfy { $0.isClosed })
    }

    @Test func anEmptyRequestIsRefusedBeforeAnythingOpens() async throws {
        let client = Client()
        await #expect(throws: AuthenticatorTransportError.self) {
            try await PhoneRequestForwarder.forward([], via: try client.phone())
        }
        #expect(!client.air.isScanning && client.relay.opened.isEmpty)
    }
}
