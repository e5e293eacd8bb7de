import Basics
import CTAP2
import Foundation
import PasskeyStoreIO

/// What a note may be when a person sets one (`passkey note`, `passkey password note`): not empty once trailing
/// white space is cut, at most ``SQLiteCredentialStore/maximumNoteLength`` bytes of UTF-8, and no control or format
/// characters but line feeds and tabs (a note is shown on terminals).
public enum NoteText {
    /// `text` as it will be kept (trailing white space and new lines cut), or why it cannot be a note.
    public static func checked(_ text: String) throws(ProviderError) -> String {
        var kept = text
        while let last = kept.last, last.isWhitespace { kept.removeLast() }
        guard !kept.isEmpty else {
            throw ProviderError("the note is empty", hint: "To remove a note, use --clear.")
        }
        guard kept.utf8.count <= SQLiteCredentialStore.maximumNoteLength else {
            throw ProviderError(
                "the note is \(kept.utf8.count) bytes long; a note keeps at most "
                    + "\(SQLiteCredentialStore.maximumNoteLength)")
        }
        let allowed = kept.unicodeScalars.allSatisfy { scalar in
            scalar == "\n" || scalar == "\t"
                || (scalar.properties.generalCategory != .control && scalar.properties.generalCategory != .format)
        }
        guard allowed else { throw ProviderError("the note holds a control or format character") }
        return kept
    }
}

/// A note as a command shows it: the text, or that it fails its integrity check.
public enum NoteDisplay {
    public static func text(_ note: StoredNote) -> String {
        switch note {
        case .text(let text): text
        case .damaged: "(this note fails its integrity check: it was changed outside passkey)"
        }
    }
}

extension PasskeyCatalog {
    /// The note of the one passkey whose credential ID is one of `candidates` (`text` as the person gave it), with the
    /// passkey's row; nil when it has none.
    public func note(
        candidates: [[UInt8]], text: String
    ) async throws(ProviderError) -> (entry: CredentialEntry, note: StoredNote?) {
        try await withPasskey(candidates: candidates, text: text) { store, id, entry in
            (entry, try store.note(of: .passkey(credentialID: id)))
        }
    }

    /// Sets (or with nil removes) the note of the one passkey whose credential ID is one of `candidates`. `note` is
    /// checked first (``NoteText/checked(_:)``). Returns the passkey's row.
    public func setNote(
        _ note: String?, candidates: [[UInt8]], text: String
    ) async throws(ProviderError) -> CredentialEntry {
        let note = try note.map { (note) throws(ProviderError) in try NoteText.checked(note) }
        return try await withPasskey(candidates: candidates, text: text) { store, id, entry in
            guard try store.setNote(note, of: .passkey(credentialID: id)) else {
                throw ProviderError("no passkey with credential ID \(text)")
            }
            return entry
        }
    }
}

extension PasswordVault {
    /// The saved login of `user` at `service`, for its note.
    private func login(service: PasswordService, user: String) throws(ProviderError) -> SavedLogin {
        let entry = try storing { () throws(CredentialStoreError) in
            try store.passwordEntry(service: service, userName: user)
        }
        switch entry {
        case .intact(let credential)?: return credential.login
        case .damaged?:
            throw ProviderError(
                "the saved password for \(user.quoted) at \(service.text) is damaged, so it cannot have a note",
                hint: "Delete it (`passkey password delete`) and save it again.")
        case nil: throw ProviderError("no saved password for \(user.quoted) at \(service.text)")
        }
    }

    /// The note of the login of `user` at `service`; nil when it has none.
    public func note(service: PasswordService, user: String) throws(ProviderError) -> StoredNote? {
        let id = try login(service: service, user: user).id
        return try storing { () throws(CredentialStoreError) in try store.note(of: .password(id: id)) }
    }

    /// Sets (or with nil removes) the note of the login of `user` at `service`, checked first.
    public func setNote(_ note: String?, service: PasswordService, user: String) throws(ProviderError) {
        let note = try note.map { (note) throws(ProviderError) in try NoteText.checked(note) }
        let id = try login(service: service, user: user).id
        let saved = try storing { () throws(CredentialStoreError) in try store.setNote(note, of: .password(id: id)) }
        guard saved else { throw ProviderError("no saved password for \(user.quoted) at \(service.text)") }
    }

    /// Every saved password's note, by the login's ID.
    public func notes() throws(ProviderError) -> [[UInt8]: StoredNote] {
        try storing { () throws(CredentialStoreError) in try store.notes(ofPasswords: true) }
    }
}
