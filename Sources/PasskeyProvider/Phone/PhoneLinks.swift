import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import PasskeyFilesIO
import PasskeyStoreIO

/// The phone's link state (`PasskeyFiles.phoneLinks`, sealed under the store key): its contact at each relay and the
/// computers linked through it. Registering a contact, listing, removing one link and revoking every link at a relay
/// (`passkey links`).
public struct PhoneLinks: Sendable {
    /// The store, opened for serving: the state changes only under its lock.
    public let store: SQLiteCredentialStore
    public let interface: any ProviderUserInterface
    public let environment: HybridEnvironment
    /// Opening the relay's WebSocket, and its answers.
    public let timeout: Duration

    public init(
        store: SQLiteCredentialStore, interface: any ProviderUserInterface, environment: HybridEnvironment,
        timeout: Duration = .seconds(10)
    ) {
        self.store = store
        self.interface = interface
        self.environment = environment
        self.timeout = timeout
    }

    /// Removes the link `linkID`: when that computer next asks for this phone, `listen` declines the wake.
    public func remove(linkID: [UInt8]) throws(ProviderError) {
        guard var current = try state(), current.link(id: linkID) != nil else {
            throw ProviderError("this phone has no link \(linkID.hexString)")
        }
        current.links.removeAll { $0.linkID == linkID }
        try save(current)
    }

    /// What revoking at a relay did.
    public struct Revocation: Hashable, Sendable {
        public var relay: String
        /// How many links went with the contact.
        public var removedLinks: Int
        /// The relay did not know the contact any more (nothing to revoke there; the links go all the same).
        public var relayHadForgotten: Bool

        public init(relay: String, removedLinks: Int, relayHadForgotten: Bool) {
            self.relay = relay
            self.removedLinks = removedLinks
            self.relayHadForgotten = relayHadForgotten
        }
    }

    /// Tells the relay (`relay`, or the only one) to forget this phone's contact, then removes the contact and its
    /// links here. A relay that cannot be reached changes nothing.
    public func revoke(relay requested: TunnelServerBaseURL?) async throws(ProviderError) -> Revocation {
        guard var current = try state() else { throw ProviderError("this phone has no linked computer") }
        let contact = try Self.chooseContact(current, relay: requested)
        guard let relay = try? TunnelServerBaseURL(string: contact.relay) else {
            throw ProviderError("the stored relay \(contact.relay) is not a ws:// or wss:// URL")
        }
        var forgotten = false
        do throws(ContactListenerError) {
            try await ContactListener(relay: relay, environment: environment, timeout: timeout).revoke(
                contactID: contact.contactID, listenerSecret: contact.listenerSecret)
        } catch .unknownContact {
            forgotten = true
        } catch {
            throw ProviderError("cannot revoke at \(relay): \(error)")
        }
        let removed = current.links.filter { $0.relay == contact.relay }.count
        current.links.removeAll { $0.relay == contact.relay }
        current.contacts.removeAll { $0.relay == contact.relay }
        try save(current)
        return Revocation(relay: relay.string, removedLinks: removed, relayHadForgotten: forgotten)
    }

    /// A new link for the computer: the phone's contact at `relay` (registered now if need be), a fresh link ID and
    /// secret, the identity key.
    func prepareLink(relay: TunnelServerBaseURL, name: String) async throws(ProviderError) -> (
        offer: LinkingOffer, state: PhoneLinkState, relay: String
    ) {
        var current = try state() ?? PhoneLinkState()
        let registered = try await contact(at: relay, state: &current)
        guard let identityKey = current.identityPrivateKey else { throw invalidIdentityKey }
        let offer = LinkingOffer(
            contactID: registered.contactID, linkID: environment.randomBytes(LinkingInfo.linkIDLength),
            linkSecret: environment.randomBytes(LinkingInfo.linkSecretLength), identityKey: identityKey, name: name)
        return (offer, current, registered.relay)
    }

    /// The contact at `relay`, registering one (and saving the state) when there is none.
    func contact(at relay: TunnelServerBaseURL, state: inout PhoneLinkState) async throws(ProviderError)
        -> PhoneContact
    {
        if let contact = state.contact(at: relay.string) { return contact }
        let secret = environment.randomBytes(32)
        let contactID: [UInt8]
        do {
            contactID = try await ContactListener(relay: relay, environment: environment, timeout: timeout)
                .register(listenerSecret: secret)
        } catch {
            throw ProviderError("cannot register this phone with the relay \(relay): \(error)")
        }
        let contact = PhoneContact(
            relay: relay.string, contactID: contactID, listenerSecret: secret, registered: environment.currentDate())
        state.contacts.append(contact)
        try save(state)
        interface.report(.phone(.registered(relay: relay.string)))
        return contact
    }

    /// The contact to listen or revoke on: the one at `relay`, or the only one.
    public static func chooseContact(_ state: PhoneLinkState, relay: TunnelServerBaseURL?) throws(ProviderError)
        -> PhoneContact
    {
        if let relay {
            guard let contact = state.contact(at: relay.string) else {
                throw ProviderError(
                    "this phone is not registered with \(relay)",
                    hint: "Link a computer first: `passkey scan --link --relay \(relay) …`.")
            }
            return contact
        }
        switch state.contacts.count {
        case 0:
            throw ProviderError(
                "this phone is registered with no relay",
                hint: "Link a computer first: `passkey scan --link --relay URL …`.")
        case 1:
            return state.contacts[0]
        default:
            throw ProviderError(
                "this phone is registered with several relays: "
                    + state.contacts.map(\.relay).joined(separator: ", "), hint: "Choose one with --relay.")
        }
    }

    /// The phone's link state; nil when it has none yet.
    public func state() throws(ProviderError) -> PhoneLinkState? {
        do {
            return try PhoneLinkFile.load(for: store)
        } catch {
            throw ProviderError(error.message)
        }
    }

    public func save(_ state: PhoneLinkState) throws(ProviderError) {
        do {
            try PhoneLinkFile.save(state, for: store)
        } catch {
            throw ProviderError(error.message)
        }
    }

    var invalidIdentityKey: ProviderError {
        ProviderError("the phone's identity key in \(PasskeyFiles(store: store.url).phoneLinks.path) is invalid")
    }

    /// The default name a phone gives itself in linking information: `passkey on HOST`.
    public static func defaultName(hostName: String = ProcessInfo.processInfo.hostName) -> String {
        let host = hostName.split(separator: ".").first.map(String.init) ?? "linux"
        return "passkey on \(host)"
    }
}
