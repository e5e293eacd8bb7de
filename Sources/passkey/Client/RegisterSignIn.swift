import ArgumentParser
import Basics
import CTAP2
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import PasskeyStoreIO
import Proximity
import PublicSuffix
import QRImageIO
import RelyingParty
import WebRelyingPartyIO
import WebAuthn
import WebAuthnClient
import WebAuthnClientIO
import WebRelyingParty
import PasskeyFilesIO
import PasskeyProvider

extension Passkey.Client {
    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a discoverable passkey for an account through a phone.",
            discussion: """
                A convenience over `client create`: this package's relying party for --rp writes the options \
                (resident key and user verification required, the account's passkeys excluded), the WebAuthn \
                client reaches a phone by QR code, and the relying party verifies the answer and keeps the public \
                key in its state file.
                """)

        @OptionGroup var options: ClientOptions
        @Option(help: "Account name to register.") var user: String
        @Option(help: "Display name (default: the account name).") var displayName: String?

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let options = options
            let accepted = try await options.run {
                let engine = try await options.phoneEngine()
                return try await options.localRelyingParty.register(
                    user: user, displayName: displayName, makeEngine: { engine })
            }
            let credentialID = accepted.credential.id.base64URLEncodedString
            if options.json {
                try ClientOptions.printJSON([
                    "outcome": "registered", "rpId": options.rp, "user": accepted.userName,
                    "credentialId": credentialID, "attestationFormat": accepted.credential.attestationFormat,
                    "userVerified": accepted.userVerified, "aaguid": accepted.credential.aaguid.description,
                    "rpState": options.stateURL.path,
                ])
            } else {
                printLine("registered \(accepted.userName) at \(options.rp)")
                printLine("  credential ID  \(credentialID)")
                printLine(
                    "  attestation    \(accepted.credential.attestationFormat), user verified \(accepted.userVerified)")
                printLine("  saved to       \(options.stateURL.path)")
            }
        }
    }

    struct SignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-in",
            abstract: "Sign in with a passkey registered earlier, through a phone.",
            discussion: """
                A convenience over `client get`, with this package's relying party for --rp. Without --user the \
                request has no allowCredentials and the phone picks the account.
                """)

        @OptionGroup var options: ClientOptions
        @Option(help: "Sign in as this registered account (its credential goes in the allowList).") var user: String?

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let options = options
            let accepted = try await options.run {
                let engine = try await options.phoneEngine()
                return try await options.localRelyingParty.signIn(user: user, makeEngine: { engine })
            }
            let credentialID = accepted.credential.id.base64URLEncodedString
            if options.json {
                try ClientOptions.printJSON([
                    "outcome": "signedIn", "rpId": options.rp, "credentialId": credentialID,
                    "userVerified": accepted.userVerified, "user": accepted.userName,
                ])
            } else {
                printLine("signed in to \(options.rp) as \(accepted.userName)")
                printLine("  credential ID  \(credentialID)")
                printLine("  user verified  \(accepted.userVerified)")
            }
        }
    }
}
