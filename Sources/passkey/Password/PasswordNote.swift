import ArgumentParser
import Basics
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey.Password {
    /// `passkey password note SERVICE USER`.
    struct Note: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write, show or remove the note of a saved login.",
            discussion: """
                A note is your own text about the login (security questions, where its recovery codes are), \
                sealed in the store like the password. It is read from --file, or standard input: one line after a \
                prompt on a terminal, all of it from a pipe. At most 10,000 bytes; line feeds and tabs are kept, \
                other control characters refused.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "The service: a domain, an https:// origin or an app ID.") var service: String
        @Argument(help: "The user name.") var user: String
        @OptionGroup var note: NoteOptions
        @OptionGroup var verbosity: OutputOptions

        func validate() throws {
            _ = try PasswordService.named(service)
        }

        func run() async throws {
            let service = try PasswordService.named(service)
            let login = PasswordPrompts.login(user, service)
            if note.show {
                let saved = try await PasswordPrompts.withVault(store) { try $0.note(service: service, user: user) }
                guard let saved else { throw ProviderError("the saved password for \(login) has no note") }
                printLine(NoteDisplay.text(saved))
                return
            }
            // Read before the store is unlocked, so a prompt for the note does not wait on an unlocked store.
            let text = try await note.text()
            try await PasswordPrompts.withVault(store) { try $0.setNote(text, service: service, user: user) }
            printLine("\(text == nil ? "Removed" : "Saved") the note of the saved password for \(login).")
        }
    }
}
