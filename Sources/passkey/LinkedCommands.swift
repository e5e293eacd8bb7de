import ArgumentParser
import Basics
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO

extension Passkey {
    /// The phone's side of linking: the computers that can wake it, and revoking them.
    struct Linked: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The computers linked to this phone (passkey scan --link): list them, revoke them.",
            subcommands: [List.self, Remove.self, Revoke.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List this phone's relays and linked computers (never their secrets).")
            @OptionGroup var store: StoreOptions
            @Flag(help: "Print one JSON object.") var json = false

            func run() async throws {
                let (lock, store) = try await store.openForServing(create: false)
                defer {
                    store.close()
                    withExtendedLifetime(lock) {}
                }
                let state = try PhoneLinkFile.load(for: store) ?? PhoneLinkState()
                let format = Date.ISO8601FormatStyle()
                if json {
                    try ClientOptions.printJSON([
                        "relays": state.contacts.map {
                            ["relay": $0.relay, "registered": $0.registered.formatted(format)]
                        },
                        "links": state.links.map { link in
                            var entry: [String: Any] = [
                                "linkID": link.linkID.hexString, "relay": link.relay,
                                "created": link.created.formatted(format),
                            ]
                            if let used = link.lastUsed { entry["lastUsed"] = used.formatted(format) }
                            return entry
                        },
                    ])
                    return
                }
                if state.contacts.isEmpty { print("no relay: link a computer with `passkey scan --link --relay URL`") }
                for contact in state.contacts {
                    print("relay \(contact.relay), registered \(contact.registered.formatted(format))")
                    for link in state.links where link.relay == contact.relay {
                        let used = link.lastUsed.map { ", last used \($0.formatted(format))" } ?? ""
                        print("  link \(link.linkID.hexString), created \(link.created.formatted(format))\(used)")
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
                help: ArgumentHelp("The link ID, as `passkey linked list` prints it (hex).", valueName: "link-id"))
            var linkID: String

            func validate() throws {
                guard let bytes = [UInt8](hex: linkID), bytes.count == LinkingInfo.linkIDLength else {
                    throw ValidationError("the link ID is 16 hex digits, as `passkey linked list` prints it")
                }
            }

            func run() async throws {
                let (lock, store) = try await store.openForServing(create: false)
                defer {
                    store.close()
                    withExtendedLifetime(lock) {}
                }
                guard var state = try PhoneLinkFile.load(for: store), let id = [UInt8](hex: linkID),
                    state.link(id: id) != nil
                else { throw CommandFailure("this phone has no link \(linkID.lowercased())") }
                state.links.removeAll { $0.linkID == id }
                try PhoneLinkFile.save(state, for: store)
                print("removed link \(id.hexString)")
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

            func run() async throws {
                let (lock, store) = try await store.openForServing(create: false)
                defer {
                    store.close()
                    withExtendedLifetime(lock) {}
                }
                guard var state = try PhoneLinkFile.load(for: store) else {
                    throw CommandFailure("this phone has no linked computer")
                }
                let contact = try PhoneLinking.chooseContact(state, relay: hybrid.tunnelServer)
                guard let relay = try? TunnelServerBaseURL(string: contact.relay) else {
                    throw CommandFailure("the stored relay \(contact.relay) is not a ws:// or wss:// URL")
                }
                let listener = ContactListener(
                    relay: relay, environment: .system(tls: try hybrid.tlsConfiguration()),
                    timeout: hybrid.timeouts.connect)
                do throws(ContactListenerError) {
                    try await listener.revoke(contactID: contact.contactID, listenerSecret: contact.listenerSecret)
                } catch .unknownContact {
                    Terminal.shared.write("passkey: the relay did not know this contact any more\n")
                } catch {
                    throw CommandFailure("cannot revoke at \(relay): \(error)")
                }
                let removed = state.links.filter { $0.relay == contact.relay }.count
                state.links.removeAll { $0.relay == contact.relay }
                state.contacts.removeAll { $0.relay == contact.relay }
                try PhoneLinkFile.save(state, for: store)
                print("revoked \(removed) link\(removed == 1 ? "" : "s") through \(relay)")
            }
        }
    }
}

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
    static func bookURL(store: StoreOptions) -> URL { LinkedPhoneBook.defaultURL(storeURL: store.url) }

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
