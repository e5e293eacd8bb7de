import CredentialExchange
import Crypto
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import NearbyShare
import Proximity
import Synchronization

/// Why a share over the air ended early: the hybrid layer (radio, relay, handshake, tunnel, timeouts) or the share
/// protocol on top of it.
public enum ShareLinkError: Error, Hashable, Sendable, CustomStringConvertible {
    case hybrid(HybridLinkError)
    case share(ShareError)

    public var description: String {
        switch self {
        case .hybrid(let error): error.description
        case .share(let error): error.description
        }
    }
}

/// What the receiver reports while it waits.
public enum ShareReceiverProgress: Hashable, Sendable {
    /// Show this `PASSKEY-SHARE:/…` URL as a QR code.
    case showQRCode(url: String)
    /// A step of the hybrid session below (its own QR code report is replaced by `showQRCode`).
    case hybrid(HybridClientProgress)
    /// The share message opened: one passkey, checked, waits for the decision.
    case passkeyReceived
    /// The acknowledgement went out and the sender took it.
    case acknowledged(ShareOutcome)
    /// The acknowledgement could not be delivered (the tunnel failed after the decision). What `decide` did stands.
    case acknowledgementFailed(String)
}

/// The receiving side, `passkey receive`: the hybrid client role (QR code, BLE scan, relay, Noise initiator) through
/// `HybridClientLink`, then the share protocol's request, the sealed passkey, and the acknowledgement.
public struct ShareReceiverLink: Sendable {
    public var scanner: any ProximityScanner
    public var tunnelServer: TunnelServerBaseURL?
    public var timeouts: HybridTimeouts
    public var environment: HybridEnvironment

    public init(
        scanner: any ProximityScanner, tunnelServer: TunnelServerBaseURL? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(), environment: HybridEnvironment
    ) {
        self.scanner = scanner
        self.tunnelServer = tunnelServer
        self.timeouts = timeouts
        self.environment = environment
    }

    /// Shows a share QR code, waits for a sender to come near and send its passkey, and passes the passkey, opened
    /// and checked, to `decide`, which asks the person and stores it (or not) and returns what it did. Returns that
    /// outcome after telling the sender (`.acknowledgementFailed` when that fails: the outcome still stands). Nothing reaches `decide` unless the handshake, the tunnel's encryption and
    /// the HPKE seal bound to this session all check.
    public func receive(
        progress: @escaping @Sendable (ShareReceiverProgress) -> Void,
        decide: (ImportedPasskey) async throws -> ShareOutcome
    ) async throws -> ShareOutcome {
        let sealingKey = P256.KeyAgreement.PrivateKey.randomSessionKey(using: environment.randomBytes)
        // The hybrid session makes its handshake key and secret; the share code is built from its QR code.
        let receiver = Mutex<ShareReceiver?>(nil)
        let link: HybridClientLink
        do throws(HybridLinkError) {
            link = try await HybridClientLink.connect(
                requestType: .getAssertion, scanner: scanner, tunnelServer: tunnelServer, timeouts: timeouts,
                environment: environment,
                progress: { event in
                    guard case .showQRCode(let url) = event else { return progress(.hybrid(event)) }
                    guard let hybrid = try? QRCodePayload(url: url),
                        let made = try? ShareReceiver(hybrid: hybrid, sealingKey: sealingKey)
                    else { return }
                    let shown = made.qrCode.url
                    receiver.withLock { $0 = made }
                    progress(.showQRCode(url: shown))
                })
        } catch {
            throw ShareLinkError.hybrid(error)
        }
        guard var state = receiver.withLock({ $0.take() }) else {
            await link.close()
            throw ShareLinkError.share(ShareError(.notASharePeer, "the share QR code could not be made"))
        }
        do {
            try ShareProtocol.checkSenderInfo(link.getInfo)
            let response = try await Self.request(state.request, on: link)
            let passkey = try await Self.open(response, with: &state, on: link)
            progress(.passkeyReceived)
            let outcome = try await decide(passkey)
            // From here on the decision stands: a failure to tell the sender is reported, not thrown, since the
            // passkey may be in the store already.
            do {
                try ShareReceiver.checkAcknowledgementAnswer(
                    try await Self.request(state.acknowledgement(outcome), on: link))
                progress(.acknowledged(outcome))
            } catch {
                progress(.acknowledgementFailed("\(error)"))
            }
            await link.close()
            return outcome
        } catch let error as ShareError {
            await link.close()
            throw ShareLinkError.share(error)
        } catch {
            await link.close()
            throw error
        }
    }

    /// The share message opened; when it does not open, the sender is told (so it does not report a success) and
    /// the error thrown. (In a function of its own: opened into a deferred `let` inside `do throws(ShareError)`,
    /// Swift 6.3 copied the passkey from uninitialized memory once `StoredCredential` grew a field, and crashed.)
    private static func open(
        _ response: [UInt8], with state: inout ShareReceiver, on link: HybridClientLink
    ) async throws -> ImportedPasskey {
        do {
            return try state.open(response, handshakeHash: link.handshakeHash)
        } catch {
            _ = try? await link.request(state.acknowledgement(.refused))
            throw error
        }
    }

    private static func request(_ bytes: [UInt8], on link: HybridClientLink) async throws -> [UInt8] {
        do throws(HybridLinkError) {
            return try await link.request(bytes)
        } catch {
            throw ShareLinkError.hybrid(error)
        }
    }
}

/// The sending side, `passkey share`: the hybrid authenticator role (relay `/cable/new`, BLE advert, Noise
/// responder) through `HybridAuthenticatorLink`, answering the receiver's share request with the sealed passkey and
/// taking its acknowledgement.
public struct ShareSenderLink: Sendable {
    public var advertiser: any ProximityAdvertiser
    public var domain: TunnelDomain
    public var tunnelServer: TunnelServerBaseURL?
    public var timeouts: HybridTimeouts
    public var environment: HybridEnvironment

    public init(
        advertiser: any ProximityAdvertiser, domain: TunnelDomain = .google, tunnelServer: TunnelServerBaseURL? = nil,
        timeouts: HybridTimeouts = HybridTimeouts(), environment: HybridEnvironment
    ) {
        self.advertiser = advertiser
        self.domain = domain
        self.tunnelServer = tunnelServer
        self.timeouts = timeouts
        self.environment = environment
    }

    /// Sends `sender`'s passkey to the receiver whose code was scanned and returns what the receiver did with it.
    /// The caller has verified the user before: nothing here asks.
    public func send(
        _ sender: ShareSender, to qrCode: ShareQRCode,
        progress: @escaping @Sendable (HybridAuthenticatorProgress) -> Void = { _ in }
    ) async throws(ShareLinkError) -> ShareOutcome {
        let machine = Mutex(sender)
        let link = HybridAuthenticatorLink(
            advertiser: advertiser, domain: domain, tunnelServer: tunnelServer, timeouts: timeouts,
            keepOpen: true, environment: environment, progress: progress)
        var failure: HybridLinkError?
        do throws(HybridLinkError) {
            _ = try await link.serve(
                qrCode: qrCode.hybridPayload, getInfo: ShareProtocol.senderInfo,
                answer: { request, handshakeHash in
                    machine.withLock { $0.answer(request, handshakeHash: handshakeHash) }
                })
        } catch {
            failure = error
        }
        switch machine.withLock({ $0.phase }) {
        case .acknowledged(let outcome):
            // Once acknowledged, how the tunnel ended does not change what the receiver did.
            return outcome
        case .failed(let error):
            throw .share(error)
        case .offered:
            if let failure { throw .hybrid(failure) }
            throw .share(ShareError(.notAcknowledged, "the receiver closed the session without acknowledging"))
        case .waiting:
            throw .hybrid(failure ?? .session(.tunnelClosed))
        }
    }
}
