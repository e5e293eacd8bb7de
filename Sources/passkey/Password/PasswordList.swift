import ArgumentParser
import Basics
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey.Password {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the saved logins (never the passwords).",
            discussion: """
                Reads the index beside the store, so no passphrase is needed; the most used logins of each service \
                come first. --verify unlocks the store instead and checks every saved password, listing damaged \
                ones too.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: "Only the logins of this service.") var service: String?
        @OptionGroup var format: JSONOption
        @Flag(help: "Unlock the store and check every saved password, damaged ones included.") var verify = false
        @Flag(help: "Unlock the store and show each login's note (`passkey password note`).") var notes = false

        func validate() throws {
            if let service { _ = try PasswordService.named(service) }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let wanted = service.flatMap(PasswordService.init)
            var rows: [PasswordRow]
            if verify || notes {
                // One unlock for the rows and the notes (notes are sealed).
                let opened = try await store.open(create: false)
                defer { opened.close() }
                rows =
                    verify
                    ? PasswordListing.rows(try opened.passwordEntries(service: wanted))
                    : PasswordListing.rows(try opened.sealedIndex().passwords, service: wanted)
                if notes {
                    let notes = try opened.notes(ofPasswords: true).mapValues(NoteDisplay.text)
                    for index in rows.indices { rows[index].note = notes[rows[index].id] }
                }
            } else {
                rows = PasswordListing.rows(try await Passkey.List.index(store: store).passwords, service: wanted)
            }
            if format.json {
                printJSON(JSONOutput.text(PasswordListing.json(rows)))
            } else {
                PasswordListing.lines(rows, service: wanted).forEach { printLine($0) }
            }
        }
    }
}
