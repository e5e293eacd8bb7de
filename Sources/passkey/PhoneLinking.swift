import ArgumentParser
import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO

/// What `passkey scan --link`, `passkey listen` and `passkey linked` share: the phone's sealed link state beside the
/// store, and its contact at a relay.
enum PhoneLinking {
    /// The relay as the state keys it: `ws[s]://host[:port]`, normalised.
    static func relayKey(_ relay: TunnelServerBaseURL) -> String { relay.string }

    /// The state of `store`, a fresh one (new identity key) when it has none.
    static func load(_ store: SQLiteCredentialStore) throws -> PhoneLinkState {
        try PhoneLinkFile.load(for: store) ?? PhoneLinkState()
    }

    /// The contact at `relay`, registering one (and saving the state) when there is none.
    static func contact(
        at relay: TunnelServerBaseURL, state: inout PhoneLinkState, store: SQLiteCredentialStore,
        environment: HybridEnvironment, status: StatusLine
    ) async throws -> PhoneContact {
        if let contact = state.contact(at: relayKey(relay)) { return contact }
        let secret = AuthenticatorEnvironment.systemRandomBytes(32)
        let contactID: [UInt8]
        do {
            contactID = try await ContactListener(relay: relay, environment: environment).register(
                listenerSecret: secret)
        } catch {
            throw CommandFailure("cannot register this phone with the relay \(relay): \(error)")
        }
        let contact = PhoneContact(
            relay: relayKey(relay), contactID: contactID, listenerSecret: secret, registered: Date())
        state.contacts.append(contact)
        try PhoneLinkFile.save(state, for: store)
        status.say("registered with the relay \(relay): it can wake this phone while `passkey listen` runs")
        return contact
    }

    /// The contact to listen or revoke on: the one at `relay`, or the only one.
    static func chooseContact(_ state: PhoneLinkState, relay: TunnelServerBaseURL?) throws -> PhoneContact {
        if let relay {
            guard let contact = state.contact(at: relayKey(relay)) else {
                throw CommandFailure(
                    "this phone is not registered with \(relay)",
                    hint: "Link a computer first: `passkey scan --link --relay \(relay) …`.")
            }
            return contact
        }
        switch state.contacts.count {
        case 0:
            throw CommandFailure(
                "this phone is registered with no relay",
                hint: "Link a computer first: `passkey scan --link --relay URL …`.")
        case 1:
            return state.contacts[0]
        default:
            throw CommandFailure(
                "this phone is registered with several relays: "
                    + state.contacts.map(\.relay).joined(separator: ", "), hint: "Choose one with --relay.")
        }
    }

    /// The default name a phone gives itself in linking information.
    static var defaultName: String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "linux"
        return "passkey on \(host)"
    }
}
