import Basics
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import WebAuthn

extension Passkey {
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
            let entry = try await PasskeyCatalog(access: store.access()).delete(
                candidates: CredentialIDText(credentialID)?.candidates ?? [], text: credentialID)
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
