import Basics
import ArgumentParser
import Foundation
import PasskeyProvider
import TerminalIO

extension Passkey {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Export passkeys, passwords and one-time codes, sealed to an importer's key or under a passphrase.",
            discussion: """
                Writes the passkeys as a FIDO CXF document that never touches the disk in clear text: with --to, \
                sealed with HPKE to the importing side's public key (a CXP ExportResponse; make the key pair there \
                with `passkey import-key new`); with --passphrase, as a passphrase archive (scrypt and \
                AES-256-GCM) for backups, the passphrase from $PASSKEY_EXPORT_PASSPHRASE or asked twice. Passkeys \
                that are not backup eligible (BE = 0) are left out and counted. Without --rp or --credential the \
                saved passwords (with their notes) and one-time codes go too, as CXF basic-auth, note and totp \
                credentials. The file is written with mode \
                0600 and never replaces an existing one. See Docs/Exchange.md.
                """)

        @OptionGroup var store: StoreOptions
        @Option(
            help: ArgumentHelp("Seal to this importer's public key (a P-256 JWK file).", valueName: "file"),
            completion: .file(extensions: ["jwk"]))
        var to: String?
        @Flag(help: "Write a passphrase-protected archive instead.") var passphrase = false
        @Option(
            name: .customLong("rp"),
            help: ArgumentHelp("Only passkeys of this relying party ID (repeatable).", valueName: "rp-id"))
        var relyingParties: [String] = []
        @Option(
            name: .customLong("credential"),
            help: ArgumentHelp(
                "Only this passkey, by credential ID as `passkey list` shows it (repeatable).", valueName: "id"))
        var credentials: [String] = []
        @Option(
            name: .shortAndLong,
            help: ArgumentHelp("Write to this file (default: standard output).", valueName: "file"), completion: .file()
        )
        var output: String?
        @OptionGroup var format: JSONOption

        func validate() throws {
            guard (to != nil) != passphrase else { throw ValidationError("Give either --to FILE or --passphrase.") }
            if format.json && output == nil {
                throw ValidationError("--json needs --output FILE: without it the export itself is standard output.")
            }
            for text in credentials where CredentialIDText(text) == nil {
                throw ValidationError("'\(text)' is not a base64url or hex credential ID.")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let ids = Set(credentials.flatMap { CredentialIDText($0)?.candidates ?? [] })
            let exported = try await ExchangeService(access: store.access()).export(
                sealing: to.map { .importerKey(path: $0) } ?? .passphrase, relyingParties: relyingParties,
                credentialIDs: ids, output: output)
            if let bytes = exported.bytes { FileHandle.standardOutput.write(Data(bytes + [0x0A])) }
            if format.json, let output {
                printJSON(JSONOutput.text(ExchangeLines.exportJSON(exported, output: output)))
            } else {
                Terminal.shared.write("passkey: " + ExchangeLines.exportSummary(exported, output: output) + "\n")
            }
        }
    }

}
