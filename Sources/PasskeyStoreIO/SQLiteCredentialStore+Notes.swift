import CTAP2
import Foundation

/// What a note belongs to: a passkey (by credential ID) or a saved password (by its row's random ID).
public enum NoteOwner: Hashable, Sendable {
    case passkey(credentialID: [UInt8])
    case password(id: [UInt8])
}

/// A note as read: its text, or that its seal does not open (the row was changed outside this program).
public enum StoredNote: Hashable, Sendable {
    case text(String)
    case damaged
}

/// Notes (schema version 5): a person's own text about a passkey or a saved password, such as where its recovery
/// codes are. A note is sealed like a password, AES-256-GCM under the store key, with associated data that names
/// what it belongs to (`passkey-store-note v5\0`, a kind byte, the ID), so the file never holds it in clear text
/// and a note moved to another row does not open. It lives in its row and goes when the row is deleted.
extension SQLiteCredentialStore {
    /// The longest note kept, in UTF-8 bytes.
    public static let maximumNoteLength = 10_000

    static let noteLabel = Array("passkey-store-note v5\0".utf8)

    static func noteAAD(_ owner: NoteOwner) -> [UInt8] {
        switch owner {
        case .passkey(let id): noteLabel + [1] + id
        case .password(let id): noteLabel + [2] + id
        }
    }

    /// The note of `owner`: nil when it has none, and also when there is no such passkey or password.
    public func note(of owner: NoteOwner) throws(CredentialStoreError) -> StoredNote? {
        let action = "read a note"
        let (statement, id) = Self.noteStatement(owner, select: true)
        let sealed = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(statement).query([.blob(id)]) { $0.blob(0) }
            }
        }
        guard let first = sealed.first, let bytes = first else { return nil }
        return try openNote(bytes, owner: owner)
    }

    /// Sets (or, with nil, removes) the note of `owner`; false when there is no such passkey or password. The note
    /// is checked by the caller (at most ``maximumNoteLength`` bytes).
    public func setNote(_ note: String?, of owner: NoteOwner) throws(CredentialStoreError) -> Bool {
        let action = "save a note"
        if let note, note.utf8.count > Self.maximumNoteLength {
            throw CredentialStoreError(.io, "cannot \(action): a note must be at most \(Self.maximumNoteLength) bytes")
        }
        let sealed = try note.map { (note) throws(CredentialStoreError) in
            try keyring.seal(Array(note.utf8), aad: Self.noteAAD(owner), use: .rows)
        }
        let (statement, id) = Self.noteStatement(owner, select: false)
        return try write(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(statement).run([sealed.map(SQLiteValue.blob) ?? .null, .blob(id)]) > 0
            }
        }
    }

    /// Every note of passkeys (`passwords` false) or of saved passwords, by credential ID or password ID.
    public func notes(ofPasswords passwords: Bool = false) throws(CredentialStoreError) -> [[UInt8]: StoredNote] {
        let action = "read the notes"
        let rows = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(passwords ? SQL.selectPasswordNotes : SQL.selectNotes).query([]) {
                    ($0.blob(0), $0.blob(1))
                }
            }
        }
        var notes: [[UInt8]: StoredNote] = [:]
        for case (let id?, let sealed?) in rows {
            notes[id] = try openNote(sealed, owner: passwords ? .password(id: id) : .passkey(credentialID: id))
        }
        return notes
    }

    private func openNote(_ sealed: [UInt8], owner: NoteOwner) throws(CredentialStoreError) -> StoredNote {
        guard let opened = try keyring.open(sealed, aad: Self.noteAAD(owner), use: .rows),
            let text = String(validating: opened, as: UTF8.self)
        else { return .damaged }
        return .text(text)
    }

    private static func noteStatement(_ owner: NoteOwner, select: Bool) -> (String, [UInt8]) {
        switch owner {
        case .passkey(let id): (select ? SQL.selectNote : SQL.updateNote, id)
        case .password(let id): (select ? SQL.selectPasswordNote : SQL.updatePasswordNote, id)
        }
    }
}
