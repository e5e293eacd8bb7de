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
    /// The computer's linked phones (sealed in the passkey store).
    struct Links: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the phones this computer can reach without a QR code, or remove one.",
            discussion: """
                A phone is remembered after a QR session with --link, when the phone sends linking information \
                (`passkey scan --link`). `passkey client get --linked NAME` then reaches it through its relay. The \
                links are sealed under the passkey store's key (passkeys.computer-links.sealed beside the store), so \
                listing and removing unlock the store (Docs/Hybrid.md, "Linked phones").
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("Forget the phone with this name.", valueName: "name")) var remove: String?
        @Flag(help: "Print one JSON object.") var json = false

        func run() async throws {
            let computerLinks = ComputerLinks(
                store: UnlockedStore(access: store.access()), interface: TerminalInterface())
            if let remove {
                try await computerLinks.remove(named: remove)
                printLine("forgot \(remove.terminalSafe)")
                return
            }
            let phones = try await computerLinks.phones()
            let format = Date.ISO8601FormatStyle()
            if json {
                try ClientOptions.printJSON([
                    "links": phones.map { phone in
                        var entry: [String: Any] = [
                            "name": phone.name, "relay": phone.relay.string, "created": phone.created.formatted(format),
                        ]
                        if let used = phone.lastUsed { entry["lastUsed"] = used.formatted(format) }
                        return entry
                    }
                ])
                return
            }
            if phones.isEmpty {
                printLine("no linked phone (link one: `passkey client get --link …` and `passkey scan --link`)")
            }
            for phone in phones {
                let used = phone.lastUsed.map { ", last used \($0.formatted(format))" } ?? ""
                printLine(
                    "\(phone.name.terminalSafe)  via \(phone.relay), linked \(phone.created.formatted(format))\(used)")
            }
        }
    }
}
