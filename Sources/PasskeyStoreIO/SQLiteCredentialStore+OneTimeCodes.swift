import Basics
import CTAP2
import Foundation

/// A login's one-time-code secret and how its codes are made, without the secret: what listing shows.
public struct SavedOneTimeCode: Hashable, Sendable {
    /// The row's own random identifier (16 bytes).
    public var id: [UInt8]
    /// The site, as a saved password names it (a domain, an https origin or an app ID).
    public var service: PasswordService
    public var userName: String
    /// Who issued it, as the site's QR code named it (`GitHub`); shown, never used to match.
    public var issuer: String?
    public var parameters: OneTimeCode.Parameters
    public var creationDate: Date

    public init(
        id: [UInt8], service: PasswordService, userName: String, issuer: String?,
        parameters: OneTimeCode.Parameters, creationDate: Date
    ) {
        self.id = id
        self.service = service
        self.userName = userName
        self.issuer = issuer
        self.parameters = parameters
        self.creationDate = Date(milliseconds: creationDate.milliseconds)
    }
}

/// A one-time-code login with its secret, opened with the store key. The secret never appears in `description` or in
/// a mirror (`dump`).
public struct OneTimeCodeCredential: Sendable, CustomStringConvertible, CustomReflectable {
    public var saved: SavedOneTimeCode
    public var secret: [UInt8]

    public init(saved: SavedOneTimeCode, secret: [UInt8]) {
        self.saved = saved
        self.secret = secret
    }

    /// The code at `date` and how many seconds it stays valid.
    public func code(at date: Date) -> (code: String, secondsLeft: Int) {
        OneTimeCode.code(secret: secret, at: date, parameters: saved.parameters)
    }

    public var description: String {
        "one-time code for \(saved.userName) at \(saved.service) (secret hidden)"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["saved": saved, "secret": "(hidden)"], displayStyle: .struct)
    }
}

/// One row of the one-time codes table.
public enum OneTimeCodeEntry: Sendable {
    case intact(OneTimeCodeCredential)
    case damaged(DamagedLogin)
}

/// The positions of the authenticated one-time-code columns in `SQL.oneTimeCodeAuthenticatedColumns`.
enum OneTimeCodeColumn: Int, CaseIterable {
    case id, service, userName, issuer, algorithm, digits, period, creationMilliseconds
}

/// A one_time_codes row as read, before validation.
struct OneTimeCodeRecord {
    /// The authenticated columns, in `OneTimeCodeColumn` order.
    var values: [SQLiteValue]
    var sealedSecret: [UInt8]?

    init(_ row: SQLiteRow) {
        let count = Int32(OneTimeCodeColumn.allCases.count)
        values = (1...count).map { row.value($0) }
        sealedSecret = row.blob(count + 1)
    }

    func blob(_ column: OneTimeCodeColumn) -> [UInt8]? {
        if case .blob(let bytes) = values[column.rawValue] { return bytes }
        return nil
    }

    func text(_ column: OneTimeCodeColumn) -> String? {
        if case .text(let text) = values[column.rawValue] { return text }
        return nil
    }

    func integer(_ column: OneTimeCodeColumn) -> Int64? {
        if case .integer(let integer) = values[column.rawValue] { return integer }
        return nil
    }
}

/// One-time-code secrets (schema version 6): a login's TOTP secret and parameters, the secret sealed like a saved
/// password (AES-256-GCM under the store key, the rest of the row as associated data), so the file never holds it in
/// clear text and a row changed outside this program is refused as damaged. A login (service, user name) has at most
/// one. They are not in the credential identity index: nothing offers a code to another program. See
/// Docs/Passwords.md, "One-time codes".
extension SQLiteCredentialStore {
    /// What adding a one-time code did.
    public enum OneTimeCodeAddOutcome: Hashable, Sendable {
        case added
        /// The login already has one, which is kept.
        case alreadyPresent
    }

    /// Every one-time-code row, damaged ones included, of one service or of all; by service, then user name.
    public func oneTimeCodeEntries(service: PasswordService? = nil) throws(CredentialStoreError) -> [OneTimeCodeEntry] {
        let action = "read the one-time codes"
        let records = try read(action) { (connection, _) throws(CredentialStoreError) in
            try sql(action) { () throws(SQLiteFailure) in
                if let service {
                    return try connection.prepared(SQL.selectOneTimeCodesOfService).query(
                        [.text(service.text)], OneTimeCodeRecord.init)
                }
                return try connection.prepared(SQL.selectOneTimeCodes).query([], OneTimeCodeRecord.init)
            }
        }
        return try records.map { record throws(CredentialStoreError) in try oneTimeCodeEntry(record) }
    }

    /// The usable one-time codes of one service (or all), by service and user name.
    public func oneTimeCodes(service: PasswordService? = nil) throws(CredentialStoreError) -> [OneTimeCodeCredential] {
        try oneTimeCodeEntries(service: service).compactMap {
            if case .intact(let credential) = $0 { return credential }
            return nil
        }
    }

    /// Adds the one-time code of `userName` at `service`; a login that has one keeps it (`.alreadyPresent`: delete
    /// it first to replace it).
    @discardableResult
    public func addOneTimeCode(
        secret: [UInt8], service: PasswordService, userName: String, issuer: String?,
        parameters: OneTimeCode.Parameters, at date: Date = Date()
    ) throws(CredentialStoreError) -> OneTimeCodeAddOutcome {
        let action = "save the one-time code for \(userName) at \(service)"
        let row = try oneTimeCodeRow(
            secret: secret, service: service, userName: userName, issuer: issuer, parameters: parameters, at: date,
            action: action)
        let inserted = try write(action) { (connection, _) throws(CredentialStoreError) -> Bool in
            try sql(action) { () throws(SQLiteFailure) -> Bool in
                try connection.prepared(SQL.insertOneTimeCodeUnlessPresent).run(row) > 0
            }
        }
        return inserted ? .added : .alreadyPresent
    }

    /// Deletes the one-time code of `userName` at `service`, damaged or not; returns whether there was one.
    public func deleteOneTimeCode(service: PasswordService, userName: String) throws(CredentialStoreError) -> Bool {
        let action = "delete the one-time code for \(userName) at \(service)"
        return try write(action) { (connection, _) throws(CredentialStoreError) -> Bool in
            try !sql(action) { () throws(SQLiteFailure) -> [[UInt8]?] in
                try connection.prepared(SQL.deleteOneTimeCode).query([.text(service.text), .text(userName)]) {
                    $0.blob(0)
                }
            }.isEmpty
        }
    }

    // MARK: Rows

    /// A checked, sealed row for `SQL.insertOneTimeCodeUnlessPresent`: the authenticated columns and the seal.
    func oneTimeCodeRow(
        secret: [UInt8], service: PasswordService, userName: String, issuer: String?,
        parameters: OneTimeCode.Parameters, at date: Date, action: String
    ) throws(CredentialStoreError) -> [SQLiteValue] {
        guard (1...OneTimeCode.maximumSecretLength).contains(secret.count) else {
            throw CredentialStoreError(
                .io, "cannot \(action): the secret must be 1 to \(OneTimeCode.maximumSecretLength) bytes")
        }
        guard parameters.isValid else {
            throw CredentialStoreError(
                .io, "cannot \(action): codes must have 6 to 8 digits and a period of 1 to 3600 seconds")
        }
        guard userName.utf8.count <= Self.maximumUserNameLength, (issuer?.utf8.count ?? 0) <= 1024 else {
            throw CredentialStoreError(.io, "cannot \(action): the user name and issuer must be at most 1024 bytes")
        }
        let saved = SavedOneTimeCode(
            id: StoreFiles.randomBytes(16), service: service, userName: userName, issuer: issuer,
            parameters: parameters, creationDate: date)
        let values = Self.values(of: saved)
        let sealed = try RowAuthentication.sealSecret(
            secret, label: RowAuthentication.oneTimeCodeLabel, row: values, with: keyring)
        return values + [.blob(sealed)]
    }

    /// A row as a usable one-time code, or as damaged when a column is missing or out of range, or the seal does not
    /// open with the row's own columns.
    func oneTimeCodeEntry(_ record: OneTimeCodeRecord) throws(CredentialStoreError) -> OneTimeCodeEntry {
        func damaged(_ reason: DamagedCredential.Reason) -> OneTimeCodeEntry {
            .damaged(
                DamagedLogin(
                    .oneTimeCode, id: record.blob(.id) ?? [], service: record.text(.service),
                    userName: record.text(.userName),
                    reason: reason))
        }
        let issuer = record.text(.issuer)
        guard let id = record.blob(.id), id.count == 16, let serviceText = record.text(.service),
            let service = PasswordService(serviceText), service.text == serviceText,
            let userName = record.text(.userName),
            issuer != nil || record.values[OneTimeCodeColumn.issuer.rawValue] == .null,
            let algorithmName = record.text(.algorithm), let algorithm = OneTimeCode.Algorithm(rawValue: algorithmName),
            let digits = record.integer(.digits), let period = record.integer(.period),
            let created = record.integer(.creationMilliseconds), abs(created) < 9_000_000_000_000_000,
            let sealed = record.sealedSecret
        else { return damaged(.missingFields) }
        let parameters = OneTimeCode.Parameters(
            algorithm: algorithm, digits: Int(clamping: digits), period: Int(clamping: period))
        guard parameters.isValid else { return damaged(.missingFields) }
        guard
            let secret = try RowAuthentication.unsealSecret(
                sealed, label: RowAuthentication.oneTimeCodeLabel, row: record.values, with: keyring),
            !secret.isEmpty
        else { return damaged(.failsIntegrityCheck) }
        let saved = SavedOneTimeCode(
            id: id, service: service, userName: userName, issuer: issuer, parameters: parameters,
            creationDate: Date(milliseconds: created))
        return .intact(OneTimeCodeCredential(saved: saved, secret: secret))
    }

    /// The authenticated columns of `saved`, in `OneTimeCodeColumn` order.
    static func values(of saved: SavedOneTimeCode) -> [SQLiteValue] {
        [
            .blob(saved.id), .text(saved.service.text), .text(saved.userName), saved.issuer.map { .text($0) } ?? .null,
            .text(saved.parameters.algorithm.rawValue), .integer(Int64(saved.parameters.digits)),
            .integer(Int64(saved.parameters.period)), .integer(saved.creationDate.milliseconds),
        ]
    }
}
