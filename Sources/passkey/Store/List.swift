import Basics
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO
import WebAuthn
import WebAuthnClient
import WebAuthnClientIO

extension Passkey {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the passkeys in the store.",
            discussion: """
                Reads the passkey index beside the store, which names the passkeys but holds no keys, so no \
                passphrase is needed; the most recently used come first. With --verify, unlocks the store instead \
                and checks every passkey, listing damaged ones too (and rewrites the index); --notes unlocks it to \
                show each passkey's note; --hidden lists the passkeys a site's signal hid instead; --endpoints asks \
                each site where it lets you manage its passkeys. When the index is \
                missing or damaged, list rebuilds it if PASSKEY_PASSPHRASE is set, and otherwise says how to. See \
                Docs/Store.md.
                """)

        @OptionGroup var store: StoreOptions
        @Option(name: .customLong("rp"), help: "Only passkeys of this relying party ID.") var relyingParty: String?
        @OptionGroup var format: JSONOption
        @Flag(help: "Unlock the store with its passphrase and check every passkey, damaged ones included.")
        var verify = false
        @Flag(help: "Unlock the store and show each passkey's note (`passkey note`).") var notes = false
        @Flag(
            help: """
                Only the passkeys a site's signal hid (`passkey client signal`): not offered, deleted 30 days after; \
                `passkey unhide` shows one again.
                """)
        var hidden = false

        @Flag(
            help: """
                Also fetch each site's /.well-known/passkey-endpoints (as `passkey domains endpoints` does) and show \
                where it lets you manage its passkeys.
                """)
        var endpoints = false
        @Option(
            help: ArgumentHelp(
                "With --endpoints: a PEM file of CAs to trust, besides the system's.", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var ca: String?
        @Option(
            help: ArgumentHelp(
                "With --endpoints: the port the sites' HTTPS servers listen on (a local test server's).",
                valueName: "port"))
        var endpointsPort = 443

        @OptionGroup var verbosity: OutputOptions

        func validate() throws {
            guard (1...65535).contains(endpointsPort) else { throw ValidationError("--endpoints-port is 1 to 65535.") }
        }

        func run() async throws {
            let listing = try await PasskeyCatalog(access: store.access()).listing(
                relyingParty: relyingParty, verify: verify, notes: notes, hidden: hidden)
            let notes = listing.notes.mapValues(NoteDisplay.text)
            let rpIDs =
                listing.entries.map { entries in
                    entries.compactMap { entry -> String? in
                        guard case .intact(let credential) = entry else { return nil }
                        return credential.relyingPartyID
                    }
                } ?? listing.identities.map(\.serviceIdentifier)
            let links = endpoints ? await manageLinks(rpIDs) : [:]
            if let entries = listing.entries {
                show(
                    PasskeyListing.jsonObjects(entries, notes: notes, links: links),
                    PasskeyListing.lines(entries, notes: notes, links: links))
            } else {
                show(
                    PasskeyListing.jsonObjects(listing.identities, notes: notes, links: links),
                    PasskeyListing.lines(listing.identities, notes: notes, links: links))
            }
        }

        /// Where each site lets you manage its passkeys, fetched with the well-known URL's rules.
        private func manageLinks(_ rpIDs: [String]) async -> [String: PasskeyEndpoints.ManageLink] {
            let source = HTTPSPasskeyEndpointsSource(additionalCAFile: ca, port: endpointsPort)
            return await PasskeyEndpoints.manageLinks(for: rpIDs) { (name) throws(PasskeyEndpointsError) in
                try await source.endpoints(for: name)
            }
        }

        /// The listing as JSON, or as text (a line of its own when it is empty).
        private func show(_ objects: [[String: Any]], _ lines: [String]) {
            if format.json {
                printJSON(JSONOutput.text(objects))
            } else {
                printLine(
                    lines.isEmpty
                        ? PasskeyListing.empty(relyingParty: relyingParty, hidden: hidden)
                        : lines.joined(separator: "\n"))
            }
        }

        /// The index, without the passphrase. A missing or damaged one is rebuilt by unlocking the store when
        /// PASSKEY_PASSPHRASE is set (a script expects `list` to work); otherwise the user is told how.
        private func index() async throws -> CredentialIdentityIndex {
            try await Self.index(store: store)
        }

        /// The index of `store`, as `list` reads it (`password list` too): `PasskeyCatalog.index`.
        static func index(store: StoreOptions) async throws -> CredentialIdentityIndex {
            try await PasskeyCatalog(access: store.access()).index()
        }
    }
}
