import ArgumentParser
import Basics
import Foundation
import Hybrid
import HybridDriver
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey {
    /// The phone's side of linking: the computers that can wake it, and revoking them. `passkey client links` is
    /// the computer's side, with the same words (Docs/CommandLine.md, "Links").
    struct Links: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The computers linked to this phone (passkey scan --link): list, remove, revoke.",
            subcommands: [List.self, Remove.self, Revoke.self], defaultSubcommand: List.self)

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List this phone's relays and linked computers (never their secrets).")
            @OptionGroup var store: StoreOptions
            @OptionGroup var format: JSONOption

            @OptionGroup var verbosity: OutputOptions

            func run() async throws {
                try await store.withServingStore { store in
                    let state =
                        try PhoneLinks(store: store, interface: TerminalInterface(), environment: .system()).state()
                        ?? PhoneLinkState()
                    let dates = Date.ISO8601FormatStyle()
                    if format.json {
                        try ClientOptions.printJSON([
                            "relays": state.contacts.map {
                                ["relay": $0.relay, "registered": $0.registered.formatted(dates)]
                            },
                            "links": state.links.map { link in
                                var entry: [String: Any] = [
                                    "linkId": link.linkID.hexString, "relay": link.relay,
                                    "created": link.created.formatted(dates),
                                ]
                                if let used = link.lastUsed { entry["lastUsed"] = used.formatted(dates) }
                                return entry
                            },
                        ])
                        return
                    }
                    if state.contacts.isEmpty {
                        printLine("no relay: link a computer with `passkey scan --link --relay URL`")
                    }
                    for contact in state.contacts {
                        printLine("relay \(contact.relay), registered \(contact.registered.formatted(dates))")
                        for link in state.links where link.relay == contact.relay {
                            let used = link.lastUsed.map { ", last used \($0.formatted(dates))" } ?? ""
                            printLine(
                                "  link \(link.linkID.hexString), created \(link.created.formatted(dates))\(used)")
                        }
                    }
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove one linked computer.",
                discussion: """
                    Forgets the link's secret. When that computer next asks for this phone, `passkey listen` declines \
                    the wake, the relay closes the computer's request with 4410 and the computer forgets the link; \
                    the other computers are not affected.
                    """)
            @OptionGroup var store: StoreOptions
            @Argument(
                help: ArgumentHelp("The link ID, as `passkey links list` prints it (hex).", valueName: "link-id"))
            var linkID: String

            func validate() throws {
                guard let bytes = [UInt8](hex: linkID), bytes.count == LinkingInfo.linkIDLength else {
                    throw ValidationError("the link ID is 16 hex digits, as `passkey links list` prints it")
                }
            }

            @OptionGroup var verbosity: OutputOptions

            func run() async throws {
                try await store.withServingStore { store in
                    let id = [UInt8](hex: linkID) ?? []
                    try PhoneLinks(store: store, interface: TerminalInterface(), environment: .system()).remove(
                        linkID: id)
                    printLine("removed link \(id.hexString)")
                }
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Revoke every computer linked through a relay.",
                discussion: """
                    Tells the relay to forget this phone's contact: from then on it answers the linked computers \
                    with 410 Gone and they forget their links. The links and the contact are removed here too; \
                    `passkey scan --link` registers a new contact.
                    """)
            @OptionGroup var hybrid: HybridOptions
            @OptionGroup var store: StoreOptions

            @OptionGroup var verbosity: OutputOptions

            func run() async throws {
                try await store.withServingStore { store in
                    let links = PhoneLinks(
                        store: store, interface: TerminalInterface(),
                        environment: .system(tls: try hybrid.tlsConfiguration()),
                        timeout: hybrid.timeouts.connect)
                    let revoked = try await links.revoke(relay: hybrid.tunnelServer)
                    if revoked.relayHadForgotten {
                        Terminal.shared.write("passkey: the relay did not know this contact any more\n")
                    }
                    let removed = revoked.removedLinks
                    let relay = revoked.relay
                    printLine("revoked \(removed.counted("link")) through \(relay)")
                }
            }
        }
    }
}
