import CTAP2
import Hybrid
import HybridTransport
import NIOSSL
import Proximity

/// The phone's part of a cross-device ceremony: this package's CTAP2 `Authenticator` answering over hybrid
/// for one scanned QR code.
public struct CrossDeviceAuthenticator: Sendable {
    public var authenticator: Authenticator
    public var advertiser: any ProximityAdvertiser
    public var domain: TunnelDomain
    public var tunnelServer: TunnelServerBaseURL?
    public var tls: TLSConfiguration?
    public var timeouts: HybridTimeouts
    public var keepOpen: Bool
    public var progress: @Sendable (HybridAuthenticatorProgress) -> Void

    public init(
        authenticator: Authenticator,
        advertiser: any ProximityAdvertiser,
        domain: TunnelDomain = .google,
        tunnelServer: TunnelServerBaseURL? = nil,
        tls: TLSConfiguration? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(),
        keepOpen: Bool = false,
        progress: @escaping @Sendable (HybridAuthenticatorProgress) -> Void = { _ in }
    ) {
        self.authenticator = authenticator
        self.advertiser = advertiser
        self.domain = domain
        self.tunnelServer = tunnelServer
        self.tls = tls
        self.timeouts = timeouts
        self.keepOpen = keepOpen
        self.progress = progress
    }

    /// Serves the session a scanned `FIDO:/` URL asks for. Returns how many requests were answered.
    public func serve(qrCode: QRCodePayload) async throws(HybridTransportError) -> Int {
        let authenticator = authenticator
        // getInfo goes in the post-handshake message without its status byte.
        let getInfo = Array(await authenticator.handle([CTAPCommand.getInfo.rawValue]).dropFirst())
        return try await HybridAuthenticator.run(
            qrCode: qrCode, getInfo: getInfo, advertiser: advertiser, domain: domain, tunnelServer: tunnelServer,
            tls: tls, keepOpen: keepOpen, timeouts: timeouts, progress: progress,
            handle: { request in await authenticator.handle(request) })
    }
}
