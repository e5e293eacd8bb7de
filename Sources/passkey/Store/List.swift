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
                and checks every passkey, listing damaged ones too (and rewrites the index). When the index is \
                missing or damaged, list rebuilds it if PASSKEY_PASSPHRASE is set, and otherwise says how to. See \
                Docs/Store.md.
                """)

        @OptionGroup var store: StoreOptions
        @Option(name: .customLong("rp"), help: "Only passkeys of this relying party ID.") var relyingParty: String?
        @Flag(help: "Print one JSON array instead of a table.") var json = false
        @Flag(help: "Unlock the store with its passphrase and check every passkey, damaged ones included.")
        var verify = false

        func run() async throws {
            if verify {
                try await listVerified()
                return
            }
            var identities = try await index().passkeys
            if let relyingParty {
                identities = identities.filter { $0.serviceIdentifier == relyingParty }
            }
            print(
                json
                    ? JSONOutput.text(PasskeyListing.jsonObjects(identities))
                    : identities.isEmpty
                        ? PasskeyListing.empty(relyingParty: relyingParty)
                        : PasskeyListing.lines(identities).joined(separator: "\n"))
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

        /// The listing of the rows themselves, checked with the passphrase: what `list` showed before the index.
        private func listVerified() async throws {
            let entries = try await PasskeyCatalog(access: store.access()).verifiedEntries(relyingParty: relyingParty)
            print(
                json
                    ? JSONOutput.text(PasskeyListing.jsonObjects(entries))
                    : entries.isEmpty
                        ? PasskeyListing.empty(relyingParty: relyingParty)
                        : PasskeyListing.lines(entries).joined(separator: "\n"))
        }
    }
}
