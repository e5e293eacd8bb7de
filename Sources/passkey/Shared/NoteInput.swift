import Basics
import CTAP2
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

/// How `passkey note` and `passkey password note` read a note: from a file, from a pipe whole, or as one line typed
/// after a prompt on a terminal.
enum NoteInput {
    static func read(_ file: String) async throws -> String {
        if file == "-" && isatty(STDIN_FILENO) == 1 {
            guard case .line(let line) = await Terminal.shared.readLine(timeout: .seconds(600), prompt: "Note: ")
            else { throw ProviderError("no note was typed; nothing changed") }
            return line
        }
        let limit = SQLiteCredentialStore.maximumNoteLength
        let bytes = try CommandInput.read(file, limit: limit, what: "note")
        guard bytes.count <= limit else {
            throw ProviderError("the note is longer than \(limit) bytes; a note keeps at most \(limit)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProviderError("the note is not UTF-8 text")
        }
        return text
    }

    /// The passkey a note belongs to, as the commands name it.
    static func label(_ entry: CredentialEntry) -> String {
        switch entry {
        case .intact(let credential):
            "the passkey for \(credential.relyingPartyID.terminalSafe) "
                + AccountSummary.label(credential).siteChosen
        case .damaged(let damaged): "the damaged passkey \(damaged.id.base64URLEncodedString)"
        }
    }
}
