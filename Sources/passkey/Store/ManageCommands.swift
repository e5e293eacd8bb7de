import Basics
import CTAP2
import Foundation
import ArgumentParser
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a new, empty passkey store.",
            discussion: """
                Asks for the new store's passphrase twice, without echo; scripts can set PASSKEY_PASSPHRASE \
                instead. The store is made at --store, else $PASSKEY_STORE, else \
                $XDG_DATA_HOME/passkey/passkeys.sqlite. An existing store is never replaced: init then fails and \
                leaves it as it is. The passphrase needs at least 12 characters, not one or two repeated: a few \
                unrelated words do.
                """)

        @OptionGroup var store: StoreOptions
        @Flag(
            help: "Accept a passphrase shorter than the rule asks (tests only). Also $PASSKEY_ALLOW_WEAK_PASSPHRASE=1.")
        var allowWeakPassphrase = false

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let created = try await store.create(allowingWeakPassphrase: allowWeakPassphrase)
            defer { created.close() }
            printLine("Created an empty passkey store at \(created.url.path).")
            printLine("Passkeys made with `passkey serve` or `passkey scan` are kept there; `passkey list` lists them.")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete one passkey by its credential ID.",
            discussion: "Shows which passkey it is and asks first; --yes does not ask.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @OptionGroup var passkey: CredentialIDArgument

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let entry = try await PasskeyCatalog(access: store.access()).delete(
                candidates: passkey.candidates, text: passkey.credentialID, mode: approval.mode)
            switch entry {
            case .intact(let credential):
                printLine("Deleted the passkey for \(credential.relyingPartyID) (\(AccountSummary.label(credential))).")
            case .damaged(let damaged):
                printLine("Deleted the damaged passkey \(damaged.id.base64URLEncodedString).")
            }
        }
    }

    /// `passkey rename ID`.
    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename the account of one passkey: its user name, its display name or both.",
            discussion: """
                Changes what this computer shows for the passkey (`passkey list`, the account chooser), as a \
                platform's credential management does (CTAP updateUserInformation). The site keeps its own name for \
                the account; it is not told. Names are at most 64 bytes, without control characters.
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var passkey: CredentialIDArgument
        @Option(help: "The new user name (the account's name at the site, such as alice@example.com).") var name:
            String?
        @Option(help: "The new display name.") var displayName: String?
        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let (before, after) = try await PasskeyCatalog(access: store.access()).rename(
                candidates: passkey.candidates, text: passkey.credentialID, name: name,
                displayName: displayName)
            printLine(
                "Renamed the passkey for \(before.relyingPartyID.terminalSafe): "
                    + "\(AccountSummary.label(before).siteChosen) is now \(AccountSummary.label(after).siteChosen)"
                    + (after.userDisplayName.map { " (\($0.siteChosen))" } ?? "") + ".")
        }
    }

    /// `passkey unhide ID`.
    struct Unhide: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show again a passkey that a site's signal hid.",
            discussion: """
                A site that no longer accepts a passkey can say so (WebAuthn signalUnknownCredential, or \
                signalAllAcceptedCredentials without it; `passkey client signal`). The passkey is then hidden: \
                no chooser offers it and `passkey list` leaves it out, `passkey list --hidden` shows it, and it is \
                deleted 30 days after it was hidden. Until then, this brings it back (Docs/Store.md).
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var passkey: CredentialIDArgument
        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let shown = try await PasskeyCatalog(access: store.access()).unhide(
                candidates: passkey.candidates, text: passkey.credentialID)
            printLine(
                "The passkey for \(shown.relyingPartyID.terminalSafe): \(AccountSummary.label(shown).siteChosen) is "
                    + "shown again.")
        }
    }

    /// `passkey note ID`.
    struct Note: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write, show or remove the note of one passkey.",
            discussion: """
                A note is your own text about the passkey (where its recovery codes are, which device enrolled \
                it), sealed in the store like a key: it never leaves it in clear text but through `--show`, \
                `list --notes` and an export. The note is read from --file, or standard input: one line after a \
                prompt on a terminal, all of it from a pipe. At most 10,000 bytes; line feeds and tabs are kept, \
                other control characters refused.
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var passkey: CredentialIDArgument
        @OptionGroup var note: NoteOptions
        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let catalog = PasskeyCatalog(access: store.access())
            if note.show {
                let (entry, saved) = try await catalog.note(
                    candidates: passkey.candidates, text: passkey.credentialID)
                guard let saved else {
                    throw ProviderError("\(NoteInput.label(entry)) has no note")
                }
                printLine(NoteDisplay.text(saved))
                return
            }
            let text = try await note.text()
            let entry = try await catalog.setNote(text, candidates: passkey.candidates, text: passkey.credentialID)
            printLine("\(text == nil ? "Removed" : "Saved") the note of \(NoteInput.label(entry)).")
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the authenticator's capabilities and the store.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var format: JSONOption

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let store = try await store.open(create: false)
            defer { store.close() }
            let entries = try store.entries()
            let intact = entries.count { if case .intact = $0 { true } else { false } }
            let report = AuthenticatorReport(
                storePath: store.url.path, passkeys: intact, damagedPasskeys: entries.count - intact,
                keyDerivation: store.kdfParameters.description, settings: try store.settings())
            if format.json {
                printJSON(String(decoding: report.json(), as: UTF8.self))
            } else {
                report.lines().forEach { printLine($0) }
            }
        }
    }
}

extension AccountSummary {
    static func label(_ credential: StoredCredential) -> String {
        credential.userName ?? credential.userDisplayName ?? "no name"
    }
}
