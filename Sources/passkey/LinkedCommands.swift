import ArgumentParser
import Basics
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO
import PasskeyFilesIO

extension Passkey.Client {
    /// The computer's linked phones (`links.json`).
    struct Links: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the phones this computer can reach without a QR code, or remove one.",
            discussion: """
                A phone is remembered after a QR session with --link, when the phone sends linking information \
                (`passkey scan --link`). `passkey client get --linked NAME` then reaches it through its relay. The \
                links are kept in links.json beside the store (mode 0600; Docs/Hybrid.md, "Linked phones").
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("Forget the phone with this name.", valueName: "name")) var remove: String?
        @Option(help: ArgumentHelp("The links file (default: links.json beside the store).", valueName: "file"))
        var links: String?
        @Flag(help: "Print one JSON object.") var json = false

        func run() async throws {
            let book = LinkedPhoneBook(
                url: links.map { URL(fileURLWithPath: $0) } ?? ClientLinking.bookURL(store: store))
            if let remove {
                guard try book.forget(remove) else {
                    throw CommandFailure("no linked phone called \(remove.terminalSafe)")
                }
                print("forgot \(remove.terminalSafe)")
                return
            }
            let phones = try book.load()
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
                print("no linked phone (link one: `passkey client get --link …` and `passkey scan --link`)")
            }
            for phone in phones {
                let used = phone.lastUsed.map { ", last used \($0.formatted(format))" } ?? ""
                print(
                    "\(phone.name.terminalSafe)  via \(phone.relay), linked \(phone.created.formatted(format))\(used)")
            }
        }
    }
}

/// The computer's side of linking in `passkey client`: where the book is, remembering a phone after a QR session,
/// and the linked phone as an authenticator.
enum ClientLinking {
    static func bookURL(store: StoreOptions) -> URL { store.files.computerLinks }

    /// Remembers what a phone sent, saying so on standard error.
    static func remember(_ linking: LinkingInfo, relay: TunnelServerBaseURL, book: LinkedPhoneBook) {
        do {
            let name = try book.remember(linking, relay: relay, now: Date())
            Terminal.shared.write(
                "passkey: remembered the phone \"\(name.terminalSafe)\" (\(book.url.path)): "
                    + "`passkey client get --linked \"\(name.terminalSafe)\"` reaches it without a QR code\n")
        } catch {
            Terminal.shared.write("passkey: the phone's link could not be saved: \(error)\n")
        }
    }
}
