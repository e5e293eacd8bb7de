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

extension Passkey {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the passkeys in the store.",
            discussion: """
                Reads the passkey index beside the store, which names the passkeys but holds no keys, so no \
                passphrase is needed; the most recently used come first. With --verify, unlocks the store instead \
                and checks every passkey, listing damaged ones too (and rewrites the index); --notes unlocks it to \
                show each passkey's note; --hidden lists the passkeys a site's signal hid instead. When the index is \
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

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let listing = try await PasskeyCatalog(access: store.access()).listing(
                relyingParty: relyingParty, verify: verify, notes: notes, hidden: hidden)
            let notes = listing.notes.mapValues(NoteDisplay.text)
            if let entries = listing.entries {
                show(PasskeyListing.jsonObjects(entries, notes: notes), PasskeyListing.lines(entries, notes: notes))
            } else {
                show(
                    PasskeyListing.jsonObjects(listing.identities, notes: notes),
                    PasskeyListing.lines(listing.identities, notes: notes))
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
