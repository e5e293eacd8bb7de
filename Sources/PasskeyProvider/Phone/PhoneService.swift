import Basics
import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridDriver
import PasskeyFilesIO
import PasskeyStoreIO
import Proximity

/// The phone role: answering a computer's hybrid QR code with the store's passkeys (`passkey scan`), offering to
/// link that computer, and waiting for linked computers to wake it through a self-hosted relay (`passkey listen`).
///
/// The service holds the policy: one fresh authenticator per session that verifies the person for every request,
/// when a link is offered and when it is kept (only after the computer received it), which relay a contact is
/// registered at, which wakes are served, and what a relay that forgot the phone means for its links. The radio,
/// the relay's tunnels, randomness and time come in through `advertiser` and `environment`; the person through
/// `interface` and `consent`.
public struct PhoneService: Sendable {
    /// The store, opened for serving (its lock held by the caller for as long as this service runs).
    public let store: SQLiteCredentialStore
    public let interface: any ProviderUserInterface
    /// How the authenticator asks for consent (`ApprovalMode.consent`).
    public let consent: any UserInteraction
    /// The radio the phone advertises on. The service stops advertising after each session; the caller closes it.
    public let advertiser: any ProximityAdvertiser
    /// What the radio is, for the person.
    public let radio: ProximityMode
    public let environment: HybridEnvironment
    public let timeouts: HybridTimeouts

    public init(
        store: SQLiteCredentialStore, interface: any ProviderUserInterface, consent: any UserInteraction,
        advertiser: any ProximityAdvertiser, radio: ProximityMode, environment: HybridEnvironment,
        timeouts: HybridTimeouts = HybridTimeouts()
    ) {
        self.store = store
        self.interface = interface
        self.consent = consent
        self.advertiser = advertiser
        self.radio = radio
        self.environment = environment
        self.timeouts = timeouts
    }

    /// The phone's link state: its contacts at relays and the computers linked through them.
    public var links: PhoneLinks {
        PhoneLinks(store: store, interface: interface, environment: environment, timeout: timeouts.connect)
    }

    // MARK: Answering a QR code

    /// How to answer one QR code.
    public struct ScanOptions: Sendable {
        /// The relay to connect to instead of the one the advert names (`--relay`).
        public var tunnelServer: TunnelServerBaseURL?
        /// The tunnel server domain the advert names.
        public var domain: TunnelDomain
        /// Serve every request until the computer ends the session, not only the first.
        public var keepOpen: Bool
        /// Offer the computer a link (through `tunnelServer`, which must be set), under this name.
        public var linkName: String?

        public init(
            tunnelServer: TunnelServerBaseURL? = nil, domain: TunnelDomain = .google, keepOpen: Bool = false,
            linkName: String? = nil
        ) {
            self.tunnelServer = tunnelServer
            self.domain = domain
            self.keepOpen = keepOpen
            self.linkName = linkName
        }
    }

    /// What answering a QR code did.
    public struct ScanOutcome: Hashable, Sendable {
        /// How many CTAP requests the computer sent and the phone answered.
        public var answered: Int
        /// The link the computer received and the phone kept, if any.
        public var linkID: [UInt8]?

        public init(answered: Int, linkID: [UInt8]?) {
            self.answered = answered
            self.linkID = linkID
        }
    }

    /// Answers the session `qrCode` asks for. With `options.linkName`, and when the QR code says the computer can
    /// store linking information, offers a link: the phone's contact at the relay (registered now when it has none),
    /// a fresh link ID and secret, its identity key; the link is kept only if the computer received it.
    public func answer(_ qrCode: QRCodePayload, options: ScanOptions) async throws(ProviderError) -> ScanOutcome {
        let authenticator = makeAuthenticator(oneRequestPerSession: !options.keepOpen)
        let domain = options.domain
        let link = HybridAuthenticatorLink(
            advertiser: advertiser, domain: domain, tunnelServer: options.tunnelServer, timeouts: timeouts,
            keepOpen: options.keepOpen, environment: environment,
            progress: { [interface, radio] event in
                interface.report(.phone(.session(event, radio: radio, linked: false)))
            })
        var offer: (offer: LinkingOffer, state: PhoneLinkState, relay: String)? = nil
        if let name = options.linkName, let relay = options.tunnelServer {
            if qrCode.stateAssisted == true {
                offer = try await links.prepareLink(relay: relay, name: name)
            } else {
                interface.report(.phone(.computerCannotLink))
            }
        }
        let served: (answered: Int, sentLinking: Bool)
        do {
            served = try await link.serve(qrCode: qrCode, authenticator: authenticator, linkingOffer: offer?.offer)
        } catch {
            throw ProviderError("\(error)")
        }
        var kept: [UInt8]? = nil
        if served.sentLinking, let offer {
            var state = offer.state
            state.links.append(
                PhoneLink(
                    linkID: offer.offer.linkID, secret: offer.offer.linkSecret, relay: offer.relay,
                    created: environment.currentDate()))
            try links.save(state)
            kept = offer.offer.linkID
            interface.report(.phone(.linked(relay: offer.relay, linkID: offer.offer.linkID)))
        }
        interface.report(.phone(.done(answered: served.answered, listening: false)))
        return ScanOutcome(answered: served.answered, linkID: kept)
    }

    // MARK: Listening for linked computers

    /// Listens on the contact at `relay` (or the only one) until the task is cancelled or the relay refuses for
    /// good, serving each wake of a link this phone still has, one at a time. A relay that no longer knows the
    /// contact removes its links and contact here, and is an error that says so.
    public func listen(relay requested: TunnelServerBaseURL?) async throws(ProviderError) {
        guard let state = try links.state() else {
            throw ProviderError(
                "this phone has no linked computer", hint: "Link one first: `passkey scan --link --relay URL …`.")
        }
        let contact = try PhoneLinks.chooseContact(state, relay: requested)
        guard let relay = try? TunnelServerBaseURL(string: contact.relay) else {
            throw ProviderError("the stored relay \(contact.relay) is not a ws:// or wss:// URL")
        }
        guard let identityKey = state.identityPrivateKey else { throw invalidIdentityKey }
        let listener = ContactListener(relay: relay, environment: environment, timeout: timeouts.connect)
        let (wakes, sink) = AsyncStream.makeStream(of: ContactWake.self, bufferingPolicy: .bufferingNewest(8))
        // The store is locked while this runs, so the links cannot change under it.
        let linkIDs = Set(state.links.filter { $0.relay == contact.relay }.map(\.linkID))
        let interface = interface
        async let ended: ContactListenerError? = {
            defer { sink.finish() }
            do throws(ContactListenerError) {
                try await listener.listen(
                    contactID: contact.contactID, listenerSecret: contact.listenerSecret,
                    onEvent: { event in interface.report(.phone(.listener(event, relay: relay.string))) },
                    onWake: { wake in
                        // A link removed with `passkey links remove` is declined: the computer forgets it.
                        guard linkIDs.contains(wake.clientPayload.linkID) else { return false }
                        sink.yield(wake)
                        return true
                    })
                return nil
            } catch {
                return error
            }
        }()
        // One wake at a time: the radio advertises for one session.
        for await wake in wakes {
            await serve(wake, relay: relay, identityKey: identityKey, fallback: state)
        }
        guard let error = await ended else {
            interface.report(.phone(.stopped))
            return
        }
        if error == .unknownContact, var current = try? links.state() {
            // The relay forgot the contact (revoked elsewhere, expired, or a relay without a contact file restarted):
            // its links are dead, and the next `scan --link` registers a new contact.
            current.links.removeAll { $0.relay == contact.relay }
            current.contacts.removeAll { $0.relay == contact.relay }
            try? links.save(current)
            throw ProviderError(
                "the relay \(relay) no longer knows this phone: its links there were removed",
                hint: "Link the computers again with `passkey scan --link --relay \(relay) …`.")
        }
        throw ProviderError("\(error)")
    }

    /// Serves one wake, and records the link's use.
    private func serve(
        _ wake: ContactWake, relay: TunnelServerBaseURL, identityKey: P256.KeyAgreement.PrivateKey,
        fallback: PhoneLinkState
    ) async {
        let state = (try? links.state()) ?? fallback
        guard let link = state.link(id: wake.clientPayload.linkID) else {
            interface.report(.phone(.wakeIgnored(linkID: wake.clientPayload.linkID)))
            return
        }
        let service = HybridAuthenticatorLink(
            advertiser: advertiser, tunnelServer: relay, timeouts: timeouts, environment: environment,
            progress: { [interface, radio] event in
                interface.report(.phone(.session(event, radio: radio, linked: true)))
            })
        do {
            let answered = try await service.serveLinked(
                routingID: wake.routingID, tunnelID: wake.tunnelID, clientPayload: wake.clientPayload,
                linkSecret: link.secret, identityKey: identityKey,
                authenticator: makeAuthenticator(oneRequestPerSession: true))
            interface.report(.phone(.done(answered: answered, listening: true)))
            var updated = state
            if let index = updated.links.firstIndex(where: { $0.linkID == link.linkID }) {
                updated.links[index].lastUsed = environment.currentDate()
                try? links.save(updated)
            }
        } catch {
            interface.report(.phone(.linkedSessionFailed(reason: "\(error)")))
        }
    }

    // MARK: Helpers

    /// A fresh authenticator for one session: as a phone, it verifies the person for every request it accepts.
    private func makeAuthenticator(oneRequestPerSession: Bool) -> Authenticator {
        Authenticator(
            configuration: .hybridPhone(oneRequestPerSession: oneRequestPerSession),
            environment: AuthenticatorEnvironment(
                store: store, userInteraction: consent,
                reportError: { [interface] error in interface.report(.storeError("\(error)")) }))
    }

    private var invalidIdentityKey: ProviderError { links.invalidIdentityKey }
}
