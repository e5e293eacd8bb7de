import CTAP2
import Foundation

/// The positions of the authenticated password columns in `SQL.passwordAuthenticatedColumns`.
enum PasswordColumn: Int, CaseIterable {
    case id, service, userName, creationMilliseconds, modificationMilliseconds, rank
    /// Schema version 6: when the password was last given to a page; authenticated only when set.
    case filledMilliseconds

    /// The columns every version 4 and 5 seal covered; those after them count only when set.
    static let alwaysAuthenticated = PasswordColumn.filledMilliseconds.rawValue
}

/// A passwords row as read, before validation.
struct PasswordRecord {
    var sequence: Int64
    /// The authenticated columns, in `PasswordColumn` order.
    var values: [SQLiteValue]
    var sealedPassword: [UInt8]?

    init(_ row: SQLiteRow) {
        sequence = row.integer(0) ?? -1
        let count = Int32(PasswordColumn.allCases.count)
        values = (1...count).map { row.value($0) }
        sealedPassword = row.blob(count + 1)
    }

    func blob(_ column: PasswordColumn) -> [UInt8]? {
        if case .blob(let bytes) = values[column.rawValue] { return bytes }
        return nil
    }

    func text(_ column: PasswordColumn) -> String? {
        if case .text(let text) = values[column.rawValue] { return text }
        return nil
    }

    func integer(_ column: PasswordColumn) -> Int64? {
        if case .integer(let integer) = values[column.rawValue] { return integer }
        return nil
    }

    func damaged(_ reason: DamagedCredential.Reason) -> DamagedLogin {
        DamagedLogin(.password, id: blob(.id) ?? [], service: text(.service), userName: text(.userName), reason: reason)
    }
}

/// Saved passwords: a login (service, user name) and its password, sealed like a private key (AES-256-GCM under the
/// store key, the rest of the row as associated data), so the file never holds a password in clear text and a row
/// changed or moved outside this program is refused as damaged. See Docs/Passwords.md.
extension SQLiteCredentialStore {
    /// The longest password saved, in UTF-8 bytes.
    public static let maximumPasswordLength = 4096
    /// The longest user name saved, in UTF-8 bytes.
    public static let maximumUserNameLength = 1024

    /// Every passwords row, damaged ones included, of one service or of all; by service, then user name.
    public func passwordEntries(service: PasswordService? = nil) throws(CredentialStoreError) -> [PasswordEntry] {
        if let service { return try passwordEntries(SQL.selectPasswordsOfService, [.text(service.text)]) }
        return try passwordEntries(SQL.selectPasswords, [])
    }

    /// The rows whose password this program gave to a page at `date` or later (``SavedLogin/filledDate``): what an
    /// automatic passkey upgrade looks at, without opening every saved password. Each row is checked as
    /// ``passwordEntries(service:)`` checks it, so a fill time changed in the file makes its row damaged.
    public func passwordEntries(filledSince date: Date) throws(CredentialStoreError) -> [PasswordEntry] {
        try passwordEntries(SQL.selectPasswordsFilledSince, [.integer(date.milliseconds)])
    }

    /// The passwords rows a statement selects, each checked against its seal.
    private func passwordEntries(_ statement: String, _ values: [SQLiteValue]) throws(CredentialStoreError)
        -> [PasswordEntry]
    {
        let action = "read the saved passwords"
        let records = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(statement).query(values, PasswordRecord.init)
            }
        }
        return try records.map { record throws(CredentialStoreError) in try passwordEntry(record) }
    }

    /// The usable passwords of one service (or all), in listing order (`SavedLogin.listedBefore`).
    public func passwords(service: PasswordService? = nil) throws(CredentialStoreError) -> [PasswordCredential] {
        try passwordEntries(service: service).compactMap {
            if case .intact(let credential) = $0 { return credential }
            return nil
        }.sorted { SavedLogin.listedBefore($0.login, $1.login) }
    }

    /// The login for this service and user; nil when there is none. A damaged row is returned as such.
    public func passwordEntry(service: PasswordService, userName: String) throws(CredentialStoreError)
        -> PasswordEntry?
    {
        let action = "read a saved password"
        let records = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectPassword).query(
                    [.text(service.text), .text(userName)], PasswordRecord.init)
            }
        }
        return try records.first.map { record throws(CredentialStoreError) in try passwordEntry(record) }
    }

    /// Saves `password` for `userName` at `service` in one transaction: a new login is added (rank above the
    /// service's others), an existing one with another password has it replaced (its modification time set), and
    /// one with this very password (compared in constant time) is left as it is. A damaged row for the login fails
    /// with `.corrupt`: delete it first.
    @discardableResult
    public func savePassword(
        _ password: String, userName: String, service: PasswordService, at date: Date = Date()
    ) throws(CredentialStoreError) -> PasswordSaveOutcome {
        let action = "save the password for \(userName) at \(service)"
        guard !password.isEmpty, password.utf8.count <= Self.maximumPasswordLength else {
            throw CredentialStoreError(
                .io, "cannot save a password: it must be 1 to \(Self.maximumPasswordLength) bytes of UTF-8")
        }
        guard userName.utf8.count <= Self.maximumUserNameLength else {
            throw CredentialStoreError(
                .io, "cannot save a password: the user name must be at most \(Self.maximumUserNameLength) bytes")
        }
        let milliseconds = date.milliseconds
        return try write(action) { (connection, keys) throws(CredentialStoreError) -> PasswordSaveOutcome in
            let existing = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectPassword).query(
                    [.text(service.text), .text(userName)], PasswordRecord.init)
            }.first
            var login: SavedLogin
            let outcome: PasswordSaveOutcome
            if let existing {
                guard case .intact(let credential) = try passwordEntry(existing) else {
                    throw CredentialStoreError(
                        .corrupt,
                        "cannot \(action): its row fails its integrity check (delete it with `passkey password delete`)"
                    )
                }
                if credential.hasPassword(password) { return .unchanged }
                login = credential.login
                login.modificationDate = Date(milliseconds: milliseconds)
                let values = Self.values(of: login)
                let sealed = try sealPassword(password, values: values)
                try sql(action) { () throws(SQLiteFailure) in
                    _ = try connection.prepared(SQL.updatePassword).run([
                        .integer(milliseconds), .integer(Int64(login.rank)), .blob(sealed), .blob(login.id),
                    ])
                }
                outcome = .changed
            } else {
                let rank = try nextRank(connection, service: service, action: action)
                login = SavedLogin(
                    id: StoreFiles.randomBytes(16), service: service, userName: userName,
                    creationDate: Date(milliseconds: milliseconds), modificationDate: Date(milliseconds: milliseconds),
                    rank: rank)
                let values = Self.values(of: login)
                let sealed = try sealPassword(password, values: values)
                try sql(action) { () throws(SQLiteFailure) in
                    _ = try connection.prepared(SQL.insertPassword).run(values + [.blob(sealed)])
                }
                outcome = .added
            }
            updateIndex(connection, keys: &keys) { _ in [.put(Self.identity(login))] }
            return outcome
        }
    }

    /// Deletes the login for `userName` at `service`, damaged or not, from its row alone; returns whether it
    /// existed.
    public func deletePassword(service: PasswordService, userName: String) throws(CredentialStoreError) -> Bool {
        let action = "delete the password for \(userName) at \(service)"
        return try write(action) { (connection, keys) throws(CredentialStoreError) -> Bool in
            let deleted = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.deletePassword).query([.text(service.text), .text(userName)]) {
                    $0.blob(0)
                }
            }.compactMap { $0 }
            updateIndex(connection, keys: &keys) { _ in deleted.map { .removePassword($0) } }
            return !deleted.isEmpty
        }
    }

    /// Records that the login was used (its password given out): its rank goes above every other login of its
    /// service, so it is listed and offered first; with `filledAt`, also that it was given to a page then (what an
    /// automatic passkey upgrade asks for, ``SavedLogin/filledDate``). The row is sealed again, since the seal covers
    /// both. Returns the login as it now is; nil when it is gone or damaged.
    @discardableResult
    public func recordPasswordUse(_ login: SavedLogin, filledAt: Date? = nil) throws(CredentialStoreError)
        -> SavedLogin?
    {
        let action = "record the use of the password for \(login.userName) at \(login.service)"
        return try write(action) { (connection, keys) throws(CredentialStoreError) -> SavedLogin? in
            let existing = try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectPasswordByID).query([.blob(login.id)], PasswordRecord.init)
            }.first
            guard let existing, case .intact(let credential) = try passwordEntry(existing) else { return nil }
            var used = credential.login
            let top =
                try sql(action) { () throws(SQLiteFailure) in
                    try connection.prepared(SQL.maximumPasswordRank).query([.text(used.service.text)]) { $0.integer(0) }
                }.first.flatMap { $0 } ?? 0
            if used.rank < Int(clamping: top) { used.rank = Int(clamping: top) + 1 }
            if let filledAt { used.filledDate = Date(milliseconds: filledAt.milliseconds) }
            guard used != credential.login else { return used }
            let values = Self.values(of: used)
            let sealed = try sealPassword(credential.password, values: values)
            try sql(action) { () throws(SQLiteFailure) in
                _ = try connection.prepared(SQL.updatePasswordUse).run([
                    .integer(Int64(used.rank)), values[PasswordColumn.filledMilliseconds.rawValue], .blob(sealed),
                    .blob(used.id),
                ])
            }
            updateIndex(connection, keys: &keys) { _ in [.put(Self.identity(used))] }
            return used
        }
    }

    // MARK: Rows

    /// One above the service's highest rank (1 for its first login).
    func nextRank(_ connection: SQLiteConnection, service: PasswordService, action: String)
        throws(CredentialStoreError) -> Int
    {
        let top =
            try sql(action) { () throws(SQLiteFailure) in
                try connection.prepared(SQL.maximumPasswordRank).query([.text(service.text)]) { $0.integer(0) }
            }.first.flatMap { $0 } ?? 0
        return Int(clamping: top) + 1
    }

    func sealPassword(_ password: String, values: [SQLiteValue]) throws(CredentialStoreError) -> [UInt8] {
        try RowAuthentication.sealPassword(password, row: values, with: keyring)
    }

    /// A row as a usable login, or as damaged when a column is missing or out of range, or the seal does not open
    /// with the row's own columns.
    func passwordEntry(_ record: PasswordRecord) throws(CredentialStoreError) -> PasswordEntry {
        guard let id = record.blob(.id), id.count == 16, let serviceText = record.text(.service),
            let service = PasswordService(serviceText), service.text == serviceText,
            let userName = record.text(.userName), let created = record.integer(.creationMilliseconds),
            let modified = record.integer(.modificationMilliseconds), let rank = record.integer(.rank),
            abs(created) < 9_000_000_000_000_000, abs(modified) < 9_000_000_000_000_000,
            record.values[PasswordColumn.filledMilliseconds.rawValue] == .null
                || abs(record.integer(.filledMilliseconds) ?? .max) < 9_000_000_000_000_000,
            let sealed = record.sealedPassword
        else {
            return .damaged(record.damaged(.missingFields))
        }
        guard let password = try RowAuthentication.unsealPassword(sealed, row: record.values, with: keyring) else {
            return .damaged(record.damaged(.failsIntegrityCheck))
        }
        let login = SavedLogin(
            id: id, service: service, userName: userName, creationDate: Date(milliseconds: created),
            modificationDate: Date(milliseconds: modified), rank: Int(clamping: rank),
            filledDate: record.integer(.filledMilliseconds).map { Date(milliseconds: $0) })
        return .intact(PasswordCredential(login: login, password: password))
    }

    /// The authenticated columns of `login`, in `PasswordColumn` order.
    static func values(of login: SavedLogin) -> [SQLiteValue] {
        [
            .blob(login.id), .text(login.service.text), .text(login.userName),
            .integer(login.creationDate.milliseconds), .integer(login.modificationDate.milliseconds),
            .integer(Int64(login.rank)),
            login.filledDate.map { .integer($0.milliseconds) } ?? .null,
        ]
    }

    /// The index entry of a login: `kind` password, its row ID as the credential ID, no user handle.
    static func identity(_ login: SavedLogin) -> CredentialIdentity {
        CredentialIdentity(
            kind: .password, serviceIdentifier: login.service.text, userName: login.userName, credentialID: login.id,
            userHandle: [], isDiscoverable: true, creationDate: login.creationDate, rank: login.rank,
            lastUsedDate: nil)
    }

    /// Every usable login as an index entry.
    func passwordIdentities(_ connection: SQLiteConnection) throws(CredentialStoreError) -> [CredentialIdentity] {
        var identities: [CredentialIdentity] = []
        for record in try sql(
            "read the saved passwords",
            { () throws(SQLiteFailure) in
                try connection.prepared(SQL.selectPasswords).query([], PasswordRecord.init)
            })
        {
            guard case .intact(let credential) = try passwordEntry(record) else { continue }
            identities.append(Self.identity(credential.login))
        }
        return identities
    }
}
