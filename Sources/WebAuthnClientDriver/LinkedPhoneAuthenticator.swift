import CBOR
import CTAP2
import Hybrid
import HybridDriver
import HybridIO
import Proximity
import WebAuthnClient

/// A phone that sent linking information in an earlier QR session, as a `ClientAuthenticator`: opening it asks the
/// phone's relay to wake it (`/cable/contact/{CONTACT_ID}`, the phone's `passkey listen` joins), waits for its advert
/// (keys from the link secret and a fresh client nonce) and runs the NKpsk0 handshake with its identity key; no QR
/// code. A relay that answers 410 (the phone revoked its contact), or closes the tunnel with 4410 (the phone declined
/// the wake: it removed this link), means the link is gone: `onGone` is called (forget it) and the session fails
/// saying so.
public struct LinkedPhoneAuthenticator: ClientAuthenticator {
    public var kind: AuthenticatorKind { .hybrid }
    public var transports: [AuthenticatorTransport] { [.hybrid] }

    /// The phone.
    public let phone: LinkedPhone
    private let makeScanner: @Sendable () async throws(ProximityError) -> any ProximityScanner
    private let endpoint: TunnelServerEndpoint
    private let timeouts: HybridTimeouts
    private let environment: HybridEnvironment
    private let progress: @Sendable (HybridClientProgress) -> Void
    private let onGone: @Sendable () -> Void
    private let onUsed: @Sendable () -> Void

    /// - Parameters:
    ///   - endpoint: the relay to ask; the phone's own (``LinkedPhone/relay``) unless overridden.
    ///   - onGone: the relay answered 410: forget the link.
    ///   - onUsed: the handshake succeeded (a use to record).
    public init(
        phone: LinkedPhone, endpoint: TunnelServerEndpoint? = nil,
        makeScanner: @escaping @Sendable () async throws(ProximityError) -> any ProximityScanner,
        timeouts: HybridTimeouts = HybridTimeouts(), environment: HybridEnvironment,
        progress: @escaping @Sendable (HybridClientProgress) -> Void,
        onGone: @escaping @Sendable () -> Void, onUsed: @escaping @Sendable () -> Void = {}
    ) {
        self.phone = phone
        self.endpoint = endpoint ?? .override(phone.relay)
        self.makeScanner = makeScanner
        self.timeouts = timeouts
        self.environment = environment
        self.progress = progress
        self.onGone = onGone
        self.onUsed = onUsed
    }

    /// A phone lists nothing before it is reached.
    public func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

    public func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession
    {
        try await LinkedSession.open(makeScanner: makeScanner) { scanner throws(AuthenticatorTransportError) in
            try await connect(scanner, requestType: ceremony == .create ? .makeCredential : .getAssertion)
        }
    }

    private func connect(_ scanner: any ProximityScanner, requestType: HybridRequestType)
        async throws(AuthenticatorTransportError) -> HybridClientLink
    {
        let link: HybridClientLink
        do {
            link = try await HybridClientLink.connect(
                link: phone.linking, requestType: requestType, scanner: scanner, endpoint: endpoint,
                timeouts: timeouts, environment: environment, progress: progress)
        } catch {
            switch error {
            case .tunnel(.refused(status: 410)), .tunnel(.closedByRelay(code: ListenerCloseCode.unknownContact)):
                onGone()
                throw AuthenticatorTransportError(
                    "the phone \"\(phone.name)\" revoked this computer's link (the relay answered "
                        + "\(error == .tunnel(.refused(status: 410)) ? "410 Gone" : "4410, link declined")); the link "
                        + "was forgotten: scan a QR code to link again", kind: .linkGone)
            default:
                break
            }
            throw AuthenticatorTransportError(error, "the linked phone \"\(phone.name)\": ")
        }
        onUsed()
        return link
    }
}

extension AuthenticatorTransportError {
    /// A hybrid link's failure, its kind kept: cancelled, timed out (no phone near, no answer), or failed.
    init(_ error: HybridLinkError, _ prefix: String = "") {
        let kind: Kind
        switch error {
        case .cancelled: kind = .cancelled
        case .session(.noNearbyAuthenticator), .session(.linkedPhoneNotNear), .session(.timedOut): kind = .timedOut
        default: kind = .failed
        }
        self.init(prefix + error.description, kind: kind)
    }
}

/// One open session with a phone over hybrid (QR or linked).
struct LinkedSession: AuthenticatorSession {
    let link: HybridClientLink
    let scanner: any ProximityScanner
    let info: AuthenticatorInfo

    /// Opens the radio, reaches the phone with `connect` and reads its getInfo; whatever was opened is closed again
    /// when a step fails.
    static func open(
        makeScanner: @Sendable () async throws(ProximityError) -> any ProximityScanner,
        connect: (any ProximityScanner) async throws(AuthenticatorTransportError) -> HybridClientLink
    ) async throws(AuthenticatorTransportError) -> LinkedSession {
        let scanner: any ProximityScanner
        do {
            scanner = try await makeScanner()
        } catch {
            throw AuthenticatorTransportError("the Bluetooth radio: \(error)")
        }
        let link: HybridClientLink
        do {
            link = try await connect(scanner)
        } catch {
            await scanner.close()
            throw error
        }
        do {
            let info = try AuthenticatorInfo(cbor: try CBORDecoder(requiresCanonicalForm: false).decode(link.getInfo))
            return LinkedSession(link: link, scanner: scanner, info: info)
        } catch {
            await link.close()
            await scanner.close()
            throw AuthenticatorTransportError("the phone's getInfo could not be read: \(error)")
        }
    }

    func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
        do {
            return try await link.request(message)
        } catch {
            throw AuthenticatorTransportError(error)
        }
    }

    func close() async {
        await link.close()
        await scanner.close()
    }
}
