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
                show each passkey's note. When the index is \
                missing or damaged, list rebuilds it if PASSKEY_PASSPHRASE is set, and otherwise says how to. See \
                Docs/Store.md.
                """)

        @OptionGroup var store: StoreOptions
        @Option(name: .customLong("rp"), help: "Only passkeys of this relying party ID.") var relyingParty: String?
        @OptionGroup var format: JSONOption
        @Flag(help: "Unlock the store with its passphrase and check every passkey, damaged ones included.")
        var verify = false
        @Flag(help: "Unlock the store and show each passkey's note (`passkey note`).") var notes = false

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let catalog = PasskeyCatalog(access: store.access())
            // Notes are sealed: reading them unlocks the store, as --verify does.
            let notes = notes ? try await catalog.notes().mapValues(NoteDisplay.text) : [:]
            if verify {
                // The rows themselves, checked with the passphrase, damaged ones included.
                let entries = try await catalog.verifiedEntries(relyingParty: relyingParty)
                show(
                    PasskeyListing.jsonObjects(entries, notes: notes), PasskeyListing.lines(entries, notes: notes))
            } else {
                let identities = try await index().passkeys.filter {
                    relyingParty == nil || $0.serviceIdentifier == relyingParty
                }
                show(
                    PasskeyListing.jsonObjects(identities, notes: notes),
                    PasskeyListing.lines(identities, notes: notes))
            }
        }

        /// The listing as JSON, or as text (a line of its own when it is empty).
        private func show(_ objects: [[String: Any]], _ lines: [String]) {
            if format.json {
                printJSON(JSONOutput.text(objects))
            } else {
                printLine(
                    lines.isEmpty ? PasskeyListing.empty(relyingParty: relyingParty) : lines.joined(separator: "\n"))
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
