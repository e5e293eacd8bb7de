import Basics
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
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

        /// The index of `store`, as `list` reads it (`password list` too).
        static func index(store: StoreOptions) async throws -> CredentialIdentityIndex {
            let url = store.url
            guard FileManager.default.fileExists(atPath: url.path) else { throw StoreOptions.noStore(at: url) }
            do {
                return try CredentialIdentityIndex.read(forStore: url)
            } catch {
                guard ProcessInfo.processInfo.environment["PASSKEY_PASSPHRASE"] != nil else {
                    throw Self.unusable(error)
                }
            }
            // Opening the store with its passphrase rebuilds the index.
            try await store.open(create: false).close()
            do {
                return try CredentialIdentityIndex.read(forStore: url)
            } catch {
                throw Self.unusable(error)
            }
        }

        static func unusable(_ error: CredentialIdentityIndexError) -> CommandFailure {
            CommandFailure(
                "the passkey index \(error.path) is missing or damaged (\(error.reason))",
                hint: "Unlock the store once to rebuild it, for example with `passkey list --verify`.")
        }

        /// The listing of the rows themselves, checked with the passphrase: what `list` showed before the index.
        private func listVerified() async throws {
            let store = try await store.open(create: false)
            defer { store.close() }
            var entries = try store.entries()
            if let relyingParty { entries = entries.filter { $0.relyingPartyID == relyingParty } }
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

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a new, empty passkey store.",
            discussion: """
                Asks for the new store's passphrase twice, without echo; scripts can set PASSKEY_PASSPHRASE \
                instead. The store is made at --store, else $PASSKEY_STORE, else \
                $XDG_DATA_HOME/passkey/passkeys.sqlite. An existing store is never replaced: init then fails and \
                leaves it as it is.
                """)

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let created = try await store.create()
            defer { created.close() }
            print("Created an empty passkey store at \(created.url.path).")
            print("Passkeys made with `passkey serve` or `passkey scan` are kept there; `passkey list` lists them.")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete one passkey by its credential ID.")

        @OptionGroup var store: StoreOptions
        @Argument(
            help: """
                The credential ID, in base64url (as `passkey list` shows it) or hex; prefix it with b64: or hex: \
                to say which.
                """)
        var credentialID: String

        func validate() throws {
            guard CredentialIDText(credentialID) != nil else {
                throw ValidationError("'\(credentialID)' is not a base64url or hex credential ID.")
            }
        }

        func run() async throws {
            let candidates = CredentialIDText(credentialID)?.candidates ?? []
            let store = try await store.open(create: false)
            defer { store.close() }
            // The row alone decides: a damaged passkey (see `passkey list`) can be deleted too.
            var matches: [(id: [UInt8], entry: CredentialEntry)] = []
            for id in candidates {
                if let entry = try store.entry(id: id) { matches.append((id, entry)) }
            }
            guard let (id, entry) = matches.first else {
                throw CommandFailure("no passkey with credential ID \(credentialID)")
            }
            guard matches.count == 1 else {
                throw CommandFailure(
                    "'\(credentialID)' names two passkeys, read as base64url and as hex",
                    hint: "Prefix it with b64: or hex: to say which.")
            }
            guard try store.deleteCredential(id: id) else {
                throw CommandFailure("no passkey with credential ID \(credentialID)")
            }
            switch entry {
            case .intact(let credential):
                print("Deleted the passkey for \(credential.relyingPartyID) (\(AccountSummary.label(credential))).")
            case .damaged(let damaged):
                print("Deleted the damaged passkey \(damaged.id.base64URLEncodedString).")
            }
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the authenticator's capabilities and the store.")

        @OptionGroup var store: StoreOptions
        @Flag(help: "Print one JSON object.") var json = false

        func run() async throws {
            let store = try await store.open(create: false)
            defer { store.close() }
            let entries = try store.entries()
            let count = entries.count { if case .intact = $0 { true } else { false } }
            let damaged = entries.count - count
            let settings = try store.settings()
            let configuration = AuthenticatorConfiguration()
            let modes = Self.modes
            if json {
                let object: [String: Any] = [
                    "aaguid": configuration.aaguid.description,
                    "versions": ["FIDO_2_0", "FIDO_2_1"],
                    "algorithms": ["ES256"],
                    "modes": modes.map { mode in
                        [
                            "command": mode.command, "role": mode.role,
                            "transports": mode.configuration.transports,
                            "userVerification": Self.name(mode.configuration.userVerification),
                            "attestation": mode.configuration.attestationFormat.rawValue,
                            // What getInfo reports in this mode with this store's settings.
                            "options": Dictionary(
                                uniqueKeysWithValues: mode.configuration.getInfoOptions(settings).map {
                                    ($0.id, $0.value)
                                }
                            ),
                        ] as [String: Any]
                    },
                    "store": store.url.path,
                    "passkeys": count,
                    "damagedPasskeys": damaged,
                    "kdf": store.kdfParameters.description,
                    "pinSet": settings.isPINSet,
                    "pinRetries": settings.pinRetries,
                    "uvRetries": settings.uvRetries,
                    "minPINLength": settings.minimumPINLength,
                    "alwaysUv": settings.alwaysUV,
                    "forcePINChange": settings.forcePINChange,
                    "pinUvAuthProtocols": PinUvAuthProtocol.supported.map(\.rawValue),
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print("passkey authenticator")
            print("  AAGUID      \(configuration.aaguid)")
            print("  versions    FIDO_2_0, FIDO_2_1")
            print("  algorithms  ES256 (COSE -7)")
            print("  extensions  credProtect, hmac-secret, credBlob, largeBlobKey, minPinLength")
            print("  PIN/UV      protocols 2 and 1; built-in user verification is the store passphrase")
            print("modes")
            let width = modes.map(\.command.count).max() ?? 0
            let indent = String(repeating: " ", count: width + 3)
            for mode in modes {
                let uv =
                    switch mode.configuration.userVerification {
                    case .whenRequested: "user verification when asked, and for passkeys while no PIN is set"
                    case .always: "user verification for every request"
                    case .pinOnly: "no built-in user verification: the PIN verifies, once a platform has set one"
                    }
                print("  \(mode.command.padding(toLength: width, withPad: " ", startingAt: 0)) \(mode.role)")
                print("\(indent)transports \(mode.configuration.transports.joined(separator: ", ")); \(uv)")
                // getInfo options as fido2-token -I lists them: "no" before one that is false.
                let options = mode.configuration.getInfoOptions(settings).map { $0.value ? $0.id : "no\($0.id)" }
                for (index, line) in Self.wrapped(options, width: 112 - indent.count - 8).enumerated() {
                    print("\(indent)\(index == 0 ? "options " : "        ")\(line)")
                }
            }
            print("security")
            print(
                "  PIN         \(settings.isPINSet ? "set" : "not set")\(settings.forcePINChange ? " (must be changed)" : "")"
            )
            print("  PIN retries \(settings.pinRetries) of \(AuthenticatorSettings.maximumPINRetries)")
            print("  UV retries  \(settings.uvRetries) of \(AuthenticatorSettings.maximumUVRetries)")
            print("  min PIN     \(settings.minimumPINLength) code points")
            print("  alwaysUv    \(settings.alwaysUV ? "on" : "off")")
            print("store")
            print("  path        \(store.url.path)")
            print("  passkeys    \(count)\(damaged > 0 ? " (and \(damaged) damaged: see passkey list)" : "")")
            print("  encryption  AES-256-GCM, key from \(store.kdfParameters)")
        }

        /// How each command presents the authenticator: the same store, a different role, so different getInfo
        /// transports and user verification.
        static let modes: [(command: String, role: String, configuration: AuthenticatorConfiguration)] = [
            ("serve", "security key over uhid or UDP (CTAPHID)", .securityKey),
            ("serve --pin-only", "security key with a PIN only, like most hardware keys", .pinOnlySecurityKey),
            ("scan", "phone over hybrid (caBLE v2)", .hybridPhone(oneRequestPerSession: true)),
        ]

        static func name(_ policy: UserVerificationPolicy) -> String {
            switch policy {
            case .whenRequested: "whenRequested"
            case .always: "always"
            case .pinOnly: "pinOnly"
            }
        }

        /// Words joined with ", " into lines of at most `width` characters (a longer word gets a line of its own).
        static func wrapped(_ words: [String], width: Int) -> [String] {
            var lines: [String] = []
            var line = ""
            for (index, word) in words.enumerated() {
                let piece = index == words.count - 1 ? word : "\(word),"
                if !line.isEmpty && line.count + 1 + piece.count > width {
                    lines.append(line)
                    line = piece
                } else {
                    line = line.isEmpty ? piece : "\(line) \(piece)"
                }
            }
            if !line.isEmpty { lines.append(line) }
            return lines
        }
    }
}

extension AccountSummary {
    static func label(_ credential: StoredCredential) -> String {
        credential.userName ?? credential.userDisplayName ?? "no name"
    }
}
