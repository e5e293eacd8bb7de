import Basics
import CTAP2
import Foundation

/// What `importCredentials` did: the credential IDs added and those skipped because the store already had them, and
/// the same for saved passwords and one-time codes, counted (a login already in the store is skipped, never replaced).
public struct ImportOutcome: Hashable, Sendable {
    public var added: [[UInt8]]
    public var skippedDuplicates: [[UInt8]]
    public var passwordsAdded = 0
    public var passwordsAlreadyPresent = 0
    public var oneTimeCodesAdded = 0
    public var oneTimeCodesAlreadyPresent = 0
}

/// A saved password an import brings: its login, password, note and when it was made.
public struct PasswordImport: Sendable {
    public var service: PasswordService
    public var userName: String
    public var password: String
    public var note: String?
    public var creationDate: Date

    public init(service: PasswordService, userName: String, password: String, note: String?, creationDate: Date) {
        self.service = service
        self.userName = userName
        self.password = password
        self.note = note
        self.creationDate = creationDate
    }
}

/// A one-time-code secret an import brings, for a login.
public struct OneTimeCodeImport: Sendable {
    public var service: PasswordService
    public var userName: String
    public var issuer: String?
    public var parameters: OneTimeCode.Parameters
    public var secret: [UInt8]
    public var creationDate: Date

    public init(
        service: PasswordService, userName: String, issuer: String?, parameters: OneTimeCode.Parameters,
        secret: [UInt8], creationDate: Date
    ) {
        self.service = service
        self.userName = userName
        self.issuer = issuer
        self.parameters = parameters
        self.secret = secret
        self.creationDate = creationDate
    }
}

extension SQLiteCredentialStore {
    /// Adds passkeys from another provider in one transaction: all of them or, after any failure, none.
    ///
    /// A credential ID the store already has (or that comes twice) is skipped and counted, never replaced; unlike
    /// `save`, an imported discoverable passkey does not replace one of the same relying party and user handle, so
    /// an import never deletes anything. Every credential is checked and sealed before the transaction starts.
    /// `notes` gives the notes of some of them, by credential ID (a CXF `note` in a passkey's item): each is sealed
    /// and written in the same transaction, for the passkeys added only (a duplicate keeps its own note).
    /// `passwords` and `oneTimeCodes` are added in the same transaction: a login (service, user name) the store
    /// already has keeps its password, note and code, and is counted.
    public func importCredentials(
        _ credentials: [StoredCredential], notes: [[UInt8]: String] = [:], passwords: [PasswordImport] = [],
        oneTimeCodes: [OneTimeCodeImport] = []
    ) throws(CredentialStoreError) -> ImportOutcome {
        let action = "import \(credentials.count) passkeys"
        for login in passwords {
            guard !login.password.isEmpty, login.password.utf8.count <= Self.maximumPasswordLength,
                login.userName.utf8.count <= Self.maximumUserNameLength,
                (login.note?.utf8.count ?? 0) <= Self.maximumNoteLength
            else {
                throw CredentialStoreError(
                    .io, "cannot \(action): the password for \(login.userName) at \(login.service) is out of range")
            }
        }
        var codeRows: [[SQLiteValue]] = []
        for code in oneTimeCodes {
            codeRows.append(
                try oneTimeCodeRow(
                    secret: code.secret, service: code.service, userName: code.userName, issuer: code.issuer,
                    parameters: code.parameters, at: code.creationDate, action: action))
        }
        var rows: [(credential: StoredCredential, values: [SQLiteValue], note: [UInt8]?)] = []
        rows.reserveCapacity(credentials.count)
        for credential in credentials {
            try validate(credential, action: action)
            let values = Self.values(of: credential)
            var sealedNote: [UInt8]? = nil
            if let note = notes[credential.id] {
                guard note.utf8.count <= Self.maximumNoteLength else {
                    throw CredentialStoreError(
                        .io, "cannot \(action): a note must be at most \(Self.maximumNoteLength) bytes")
                }
                sealedNote = try keyring.seal(
                    Array(note.utf8), aad: Self.noteAAD(.passkey(credentialID: credential.id)), use: .rows)
            }
            rows.append((credential, values + [.blob(try seal(credential.privateKey, values: values))], sealedNote))
        }
        return try write(action) { (connection, keys) throws(CredentialStoreError) in
            var outcome = ImportOutcome(added: [], skippedDuplicates: [])
            var added: [StoredCredential] = []
            try sql(action) { () throws(SQLiteFailure) in
                let insert = try connection.prepared(SQL.insertUnlessPresent)
                let setNote = try connection.prepared(SQL.updateNote)
                for row in rows {
                    if try insert.run(row.values) > 0 {
                        outcome.added.append(row.credential.id)
                        added.append(row.credential)
                        if let note = row.note { try setNote.run([.blob(note), .blob(row.credential.id)]) }
                    } else {
                        outcome.skippedDuplicates.append(row.credential.id)
                    }
                }
            }
            var logins: [SavedLogin] = []
            for login in passwords {
                let rank = try nextRank(connection, service: login.service, action: action)
                let saved = SavedLogin(
                    id: StoreFiles.randomBytes(16), service: login.service, userName: login.userName,
                    creationDate: login.creationDate, modificationDate: login.creationDate, rank: rank)
                let values = Self.values(of: saved)
                let sealed = try sealPassword(login.password, values: values)
                let sealedNote = try login.note.map { (note) throws(CredentialStoreError) in
                    try keyring.seal(Array(note.utf8), aad: Self.noteAAD(.password(id: saved.id)), use: .rows)
                }
                let inserted = try sql(action) { () throws(SQLiteFailure) -> Bool in
                    let changes = try connection.prepared(SQL.insertPasswordUnlessPresent).run(values + [.blob(sealed)])
                    if changes > 0, let sealedNote {
                        _ = try connection.prepared(SQL.updatePasswordNote).run([.blob(sealedNote), .blob(saved.id)])
                    }
                    return changes > 0
                }
                if inserted {
                    outcome.passwordsAdded += 1
                    logins.append(saved)
                } else {
                    outcome.passwordsAlreadyPresent += 1
                }
            }
            try sql(action) { () throws(SQLiteFailure) in
                let insert = try connection.prepared(SQL.insertOneTimeCodeUnlessPresent)
                for row in codeRows {
                    if try insert.run(row) > 0 {
                        outcome.oneTimeCodesAdded += 1
                    } else {
                        outcome.oneTimeCodesAlreadyPresent += 1
                    }
                }
            }
            updateIndex(connection, keys: &keys) { _ in
                added.map { .put(Self.identity($0)) } + logins.map { .put(Self.identity($0)) }
            }
            return outcome
        }
    }
}
