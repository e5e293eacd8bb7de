import ArgumentParser
import Basics
import TerminalIO
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO
import PasskeyFilesIO
import PasskeyProvider

extension Passkey.Client {
    /// The computer's linked phones (sealed in the passkey store): the same words as the phone's `passkey links`
    /// (Docs/CommandLine.md, "Links").
    struct Links: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The phones this computer can reach without a QR code: list, remove.",
            discussion: """
                A phone is remembered after a QR session with --link, when the phone sends linking information \
                (`passkey scan --link`). `passkey client get --phone NAME` then reaches it through its relay. The \
                links are sealed under the passkey store's key (passkeys.computer-links.sealed beside the store), so \
                listing and removing unlock the store (Docs/Hybrid.md, "Linked phones").
                """,
            subcommands: [List.self, Remove.self], defaultSubcommand: List.self)

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the phones this computer can reach without a QR code.")

            @OptionGroup var store: StoreOptions
            @OptionGroup var format: JSONOption
            @OptionGroup var verbosity: OutputOptions

            func run() async throws {
                let computerLinks = ComputerLinks(
                    store: UnlockedStore(access: store.access()), interface: TerminalInterface())
                let phones = try await computerLinks.phones()
                let dates = Date.ISO8601FormatStyle()
                if format.json {
                    try ClientOptions.printJSON([
                        "links": phones.map { phone in
                            var entry: [String: Any] = [
                                "name": phone.name, "relay": phone.relay.string,
                                "created": phone.created.formatted(dates),
                            ]
                            if let used = phone.lastUsed { entry["lastUsed"] = used.formatted(dates) }
                            return entry
                        }
                    ])
                    return
                }
                if phones.isEmpty {
                    printLine("no linked phone (link one: `passkey client get --link …` and `passkey scan --link`)")
                }
                for phone in phones {
                    let used = phone.lastUsed.map { ", last used \($0.formatted(dates))" } ?? ""
                    printLine(
                        "\(phone.name.terminalSafe)  via \(phone.relay), linked \(phone.created.formatted(dates))\(used)"
                    )
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Forget one linked phone.",
                discussion: """
                    Removes the phone's link from the store; reaching it again takes a QR session with --link.
                    """)

            @OptionGroup var store: StoreOptions
            @OptionGroup var verbosity: OutputOptions
            @Argument(help: ArgumentHelp("The phone's name, as `passkey client links` lists it.", valueName: "name"))
            var name: String

            func run() async throws {
                let computerLinks = ComputerLinks(
                    store: UnlockedStore(access: store.access()), interface: TerminalInterface())
                try await computerLinks.remove(named: name)
                printLine("forgot \(name.terminalSafe)")
            }
        }
    }
}
