import Basics
import ArgumentParser
import Foundation
import PasskeyProvider
import TerminalIO

extension Passkey {
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Import passkeys, passwords and one-time codes from an export, an archive, Bitwarden or KeePassXC.",
            discussion: """
                Reads a `passkey export` file (with --key, the importer's private key), a passphrase archive \
                ($PASSKEY_EXPORT_PASSPHRASE or asked), a CXF 1.0 document, a Bitwarden unencrypted JSON export, a \
                KeePassXC .passkey file or a KeePassXC CSV export. Every passkey is checked first (a P-256 or \
                Ed25519 key, sizes the store accepts); one bad entry stops the import and nothing is written. Shows \
                what it will add, and every credential it will not carry by type and item; asks, and adds passkeys, \
                passwords (with notes) and one-time codes in one transaction; credential IDs and logins already in \
                the store are skipped and counted. See Docs/Exchange.md.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: ArgumentHelp("The file to import.", valueName: "file"), completion: .file()) var file: String
        @Option(
            help: ArgumentHelp("The importer's private key (JWK), for a sealed export.", valueName: "file"),
            completion: .file(extensions: ["jwk"]))
        var key: String?
        @OptionGroup var approval: ApprovalOptions
        @OptionGroup var format: JSONOption

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let imported = try await ExchangeService(access: store.access()).import(
                file: file, key: key, yes: approval.unattended)
            if format.json {
                printJSON(JSONOutput.text(ExchangeLines.importJSON(imported)))
            } else {
                printLine(ExchangeLines.importSummary(imported))
            }
            if imported.wasClearText {
                Terminal.shared.write(
                    "passkey: \(file.terminalSafe) holds secrets (private keys, passwords) in clear text: delete it now "
                        + "(for example `shred -u \(file.terminalSafe)`), and empty any trash or backup that has it.\n")
            }
        }
    }

    struct ImportKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-key",
            abstract: "Make the key pair an export is sealed to.",
            subcommands: [New.self])

        struct New: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a new importer key pair (P-256 JWK files).",
                discussion: """
                    Writes the private key to FILE (mode 0600: keep it, it opens every export sealed to it) and \
                    the public key to FILE with .pub.jwk, to give to the exporting side (`passkey export --to`). \
                    Neither file is replaced if it exists.
                    """)

            @Option(
                name: .shortAndLong, help: ArgumentHelp("The private key file.", valueName: "file"),
                completion: .file(extensions: ["jwk"]))
            var output = "importer.jwk"
            @OptionGroup var format: JSONOption

            @OptionGroup var verbosity: OutputOptions

            func run() throws {
                let fingerprint = try ExchangeService.newImporterKey(output: output)
                let publicPath = ExchangeService.publicKeyPath(for: output)
                if format.json {
                    printJSON(
                        JSONOutput.text(
                            ExchangeLines.importerKeyJSON(
                                fingerprint: fingerprint, privateKey: output, publicKey: publicPath)))
                    return
                }
                printLine(
                    "Wrote the private key to \(output) (mode 0600; keep it for `passkey import --key \(output)`).")
                printLine(
                    "Wrote the public key to \(publicPath): give it to the exporter (`passkey export --to \(publicPath)`)."
                )
                printLine("Fingerprint \(fingerprint)")
            }
        }
    }
}
