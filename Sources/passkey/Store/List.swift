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
            if json {
                print(try Self.json(identities))
                return
            }
            guard !identities.isEmpty else {
                print(relyingParty.map { "No passkeys for \($0)." } ?? "No passkeys.")
                return
            }
            let dates = ISO8601DateFormatter()
            for identity in identities {
                let user = [identity.userName, identity.userDisplayName.map { "(\($0))" }].compactMap { $0 }
                print("\(identity.serviceIdentifier.terminalSafe)  \(user.joined(separator: " ").terminalSafe)")
                print("    id \(identity.credentialID.base64URLEncodedString)")
                var details = [identity.isDiscoverable ? "discoverable" : "server-side (needs allowList)"]
                details.append("created \(dates.string(from: identity.creationDate))")
                details.append(identity.lastUsedDate.map { "last used \(dates.string(from: $0))" } ?? "never used")
                if identity.rank != 0 { details.append("rank \(identity.rank)") }
                print("    " + details.joined(separator: ", "))
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

        /// The listing of the rows themselves, checked with the passphrase: what `list` showed before the index.
        private func listVerified() async throws {
            let entries = try await PasskeyCatalog(access: store.access()).verifiedEntries(relyingParty: relyingParty)
            if json {
                print(try Self.json(entries))
                return
            }
            guard !entries.isEmpty else {
                print(relyingParty.map { "No passkeys for \($0)." } ?? "No passkeys.")
                return
            }
            for entry in entries {
                switch entry {
                case .intact(let credential):
                    let user = [credential.userName, credential.userDisplayName.map { "(\($0))" }].compactMap { $0 }
                    print("\(credential.relyingPartyID.terminalSafe)  \(user.joined(separator: " ").terminalSafe)")
                    print("    id \(credential.id.base64URLEncodedString)")
                    var details = [credential.isDiscoverable ? "discoverable" : "server-side (needs allowList)"]
                    details.append("created \(ISO8601DateFormatter().string(from: credential.creationDate))")
                    details.append("backup eligible \(credential.backupEligible ? "yes" : "no")")
                    print("    " + details.joined(separator: ", "))
                case .damaged(let damaged):
                    // What a damaged row claims is unauthenticated: shown only to find it, escaped like the rest.
                    let claimed = [damaged.relyingPartyID, damaged.userName].compactMap { $0 }.joined(separator: "  ")
                    print("DAMAGED  \(claimed.terminalSafe)")
                    print("    id \(damaged.id.base64URLEncodedString)")
                    print("    \(Self.reason(damaged.reason)); not used; remove it with `passkey delete`")
                }
            }
        }

        /// The index's entries in the fields `--verify --json` uses for them (no public key: the index has none).
        static func json(_ identities: [CredentialIdentity]) throws -> String {
            let dates = ISO8601DateFormatter()
            let objects: [[String: Any]] = identities.map { identity in
                var object: [String: Any] = [
                    "rpId": identity.serviceIdentifier,
                    "credentialId": identity.credentialID.base64URLEncodedString,
                    "userHandle": identity.userHandle.base64URLEncodedString,
                    "discoverable": identity.isDiscoverable,
                    "created": dates.string(from: identity.creationDate),
                    "rank": identity.rank,
                    "damaged": false,
                ]
                object["userName"] = identity.userName
                object["userDisplayName"] = identity.userDisplayName
                object["lastUsed"] = identity.lastUsedDate.map { dates.string(from: $0) }
                return object
            }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }

        static func reason(_ reason: DamagedCredential.Reason) -> String {
            switch reason {
            case .failsIntegrityCheck: "damaged: fails its integrity check (changed outside passkey, or disk damage)"
            case .missingFields: "damaged: required fields are missing"
            }
        }

        static func json(_ entries: [CredentialEntry]) throws -> String {
            let objects: [[String: Any]] = entries.map { entry in
                switch entry {
                case .intact(let credential): json(credential)
                case .damaged(let damaged):
                    [
                        "credentialId": damaged.id.base64URLEncodedString, "damaged": true,
                        "problem": reason(damaged.reason),
                    ].merging(
                        ["rpId": damaged.relyingPartyID, "userName": damaged.userName].compactMapValues { $0 },
                        uniquingKeysWith: { first, _ in first })
                }
            }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }

        static func json(_ credential: StoredCredential) -> [String: Any] {
            var object: [String: Any] = [
                "rpId": credential.relyingPartyID,
                "credentialId": credential.id.base64URLEncodedString,
                "userHandle": credential.userHandle.base64URLEncodedString,
                "discoverable": credential.isDiscoverable,
                "backupEligible": credential.backupEligible,
                "backupState": credential.backupState,
                "created": ISO8601DateFormatter().string(from: credential.creationDate),
                "publicKey": COSEKey(publicKey: credential.privateKey.publicKey).coseRepresentation.encoded()
                    .base64URLEncodedString,
                "damaged": false,
            ]
            object["rpName"] = credential.relyingPartyName
            object["userName"] = credential.userName
            object["userDisplayName"] = credential.userDisplayName
            return object
        }
    }
}
