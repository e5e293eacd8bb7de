import ArgumentParser
import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import PasskeyStoreIO
import Proximity
import ProximityIO

extension Passkey {
    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the phone in the pocket: wait for linked computers to wake this phone through its relay.",
            discussion: """
                Holds a connection to the relay this phone registered with (`passkey scan --link --relay URL`), \
                proves that it owns its contact ID, and reconnects with exponential back-off when the connection \
                ends. When a linked computer asks for it (`passkey client get --linked NAME`), the relay sends a \
                wake: this phone joins the tunnel, advertises over Bluetooth and serves the request from the store, \
                asking as `passkey scan` does (--yes for tests). Runs until SIGINT or SIGTERM; a systemd user unit \
                is in Docs/Hybrid.md ("Linked phones").
                """)

        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions

        func run() async throws {
            let status = StatusLine(enabled: true)
            let (lock, store) = try await store.openForServing(create: false)
            defer {
                store.close()
                withExtendedLifetime(lock) {}
            }
            guard let state = try PhoneLinkFile.load(for: store) else {
                throw CommandFailure(
                    "this phone has no linked computer", hint: "Link one first: `passkey scan --link --relay URL …`.")
            }
            let contact = try PhoneLinking.chooseContact(state, relay: hybrid.tunnelServer)
            guard let relay = try? TunnelServerBaseURL(string: contact.relay) else {
                throw CommandFailure("the stored relay \(contact.relay) is not a ws:// or wss:// URL")
            }
            guard let identityKey = state.identityPrivateKey else {
                throw CommandFailure(
                    "the phone's identity key in \(PhoneLinkFile.url(forStore: store.url).path) is invalid")
            }
            let mode = hybrid.mode
            let advertiser = try await Radio.advertiser(for: mode)
            let environment = HybridEnvironment.system(tls: try hybrid.tlsConfiguration())
            let listener = ContactListener(relay: relay, environment: environment, timeout: hybrid.timeouts.connect)
            let (wakes, sink) = AsyncStream.makeStream(of: ContactWake.self, bufferingPolicy: .bufferingNewest(8))
            let approval = approval
            let timeouts = hybrid.timeouts
            // The store is locked while this runs, so the links cannot change under it.
            let linkIDs = Set(state.links.filter { $0.relay == contact.relay }.map(\.linkID))

            let listening = Task { () -> ContactListenerError? in
                defer { sink.finish() }
                do throws(ContactListenerError) {
                    try await listener.listen(
                        contactID: contact.contactID, listenerSecret: contact.listenerSecret,
                        onEvent: { event in status.say(Self.describe(event, relay: relay)) },
                        onWake: { wake in
                            // A link removed with `passkey linked remove` is declined: the computer forgets it.
                            guard linkIDs.contains(wake.clientPayload.linkID) else { return false }
                            sink.yield(wake)
                            return true
                        })
                    return nil
                } catch {
                    return error
                }
            }
            let signals = ServingProcess.onStopSignal { listening.cancel() }
            defer { signals.forEach { $0.cancel() } }

            // One wake at a time: the radio advertises for one session.
            for await wake in wakes {
                let links = (try? PhoneLinkFile.load(for: store)) ?? state
                guard let link = links.link(id: wake.clientPayload.linkID) else {
                    status.say(
                        "woken for link \(wake.clientPayload.linkID.hexString), which this phone does not have: ignored"
                    )
                    continue
                }
                let authenticator = Authenticator(
                    configuration: .hybridPhone(oneRequestPerSession: true),
                    environment: AuthenticatorEnvironment(
                        store: store, userInteraction: approval.makeUserInteraction(store: store),
                        reportError: { error in Terminal.shared.write("passkey: store error: \(error)\n") }))
                let service = HybridAuthenticatorLink(
                    advertiser: advertiser, tunnelServer: relay, timeouts: timeouts, environment: environment,
                    progress: { event in status.say(Self.describe(event, mode: mode)) })
                do {
                    let answered = try await service.serveLinked(
                        routingID: wake.routingID, tunnelID: wake.tunnelID, clientPayload: wake.clientPayload,
                        linkSecret: link.secret, identityKey: identityKey, authenticator: authenticator)
                    status.say("done: answered \(answered) request\(answered == 1 ? "" : "s"); listening again")
                    var updated = links
                    if let index = updated.links.firstIndex(where: { $0.linkID == link.linkID }) {
                        updated.links[index].lastUsed = Date()
                        try? PhoneLinkFile.save(updated, for: store)
                    }
                } catch {
                    status.say("the linked session failed: \(error); listening again")
                }
            }
            await advertiser.close()
            if let error = await listening.value {
                if error == .unknownContact, var current = try? PhoneLinkFile.load(for: store) {
                    // The relay forgot the contact (revoked elsewhere, expired, or a relay without a contact file
                    // restarted): its links are dead, and the next `scan --link` registers a new contact.
                    current.links.removeAll { $0.relay == contact.relay }
                    current.contacts.removeAll { $0.relay == contact.relay }
                    try? PhoneLinkFile.save(current, for: store)
                    throw CommandFailure(
                        "the relay \(relay) no longer knows this phone: its links there were removed",
                        hint: "Link the computers again with `passkey scan --link --relay \(relay) …`.")
                }
                throw CommandFailure("\(error)")
            }
            status.say("stopped")
        }

        static func describe(_ event: ContactListenerEvent, relay: TunnelServerBaseURL) -> String {
            switch event {
            case .connecting(let attempt):
                attempt == 1
                    ? "connecting to the relay \(relay)" : "connecting to the relay \(relay) (attempt \(attempt))"
            case .listening: "listening: linked computers can wake this phone through \(relay)"
            case .woken(let linkID): "woken: a linked computer asks for this phone (link \(linkID.hexString))"
            case .badWake(let reason): "a wake was refused: \(reason)"
            case .declined(let linkID):
                "declined a wake for link \(linkID.hexString), which this phone no longer has: the computer forgets it"
            case .disconnected(let reason, let wait):
                "disconnected from the relay (\(reason)); retrying in " + String(format: "%.1f s", wait.inSeconds)
            }
        }

        static func describe(_ event: HybridAuthenticatorProgress, mode: ProximityMode) -> String {
            switch event {
            case .connecting: "joining the computer's tunnel"
            case .advertising: "tunnel joined; advertising over \(mode)"
            default: Scan.describe(event, mode: mode)
            }
        }
    }
}
