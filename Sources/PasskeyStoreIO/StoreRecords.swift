import CTAP2
import Foundation

/// The positions of the authenticated credential columns in `SQL.authenticatedColumns`.
enum CredentialColumn: Int, CaseIterable {
    case id, relyingPartyID, relyingPartyName, userHandle, userName, userDisplayName, discoverable, backupEligible
    case backupState, creationMilliseconds, credentialProtection, credentialBlob, hmacSecret, largeBlobKey
    /// Schema version 5: authenticated only when set (``RowAuthentication/credentialAAD(_:)``).
    case thirdPartyPayment
    /// Schema version 6: when a signal hid the passkey (milliseconds), NULL while shown; authenticated only when set.
    case hidden

    /// The columns every version 3 and 4 seal covered; those after them count only when set.
    static let alwaysAuthenticated = CredentialColumn.thirdPartyPayment.rawValue
}

/// A credentials row as read, before validation; every column is kept as stored because the file may be damaged.
struct CredentialRecord {
    var sequence: Int64
    /// The authenticated columns, in `CredentialColumn` order.
    var values: [SQLiteValue]
    var sealedPrivateKey: [UInt8]?

    /// Where `SQL.credentialColumns` has the sealed key: after `seq` and the authenticated columns.
    static let sealedColumn = Int32(CredentialColumn.allCases.count + 1)

    /// Reads the columns in `SQL.credentialColumns` order.
    init(_ row: SQLiteRow) {
        sequence = row.integer(0) ?? -1
        let count = Int32(CredentialColumn.allCases.count)
        values = (1...count).map { row.value($0) }
        sealedPrivateKey = row.blob(count + 1)
    }

    subscript(_ column: CredentialColumn) -> SQLiteValue { values[column.rawValue] }

    func blob(_ column: CredentialColumn) -> [UInt8]? {
        if case .blob(let bytes) = self[column] { return bytes }
        return nil
    }

    func text(_ column: CredentialColumn) -> String? {
        if case .text(let text) = self[column] { return text }
        return nil
    }

    func integer(_ column: CredentialColumn) -> Int64? {
        if case .integer(let integer) = self[column] { return integer }
        return nil
    }

    /// The row as a damaged entry, with what it claims about itself.
    func damaged(_ reason: DamagedCredential.Reason) -> DamagedCredential {
        DamagedCredential(
            id: blob(.id) ?? [], relyingPartyID: text(.relyingPartyID), userName: text(.userName), reason: reason)
    }
}

/// The settings row as read.
struct SettingsRecord {
    /// The columns of `SQL.settingsColumns`: the eight every version 3 and 4 MAC covered, then the sealed device
    /// secret (version 5), which the MAC covers only when set.
    static let columnCount = 9
    static let alwaysAuthenticated = 8

    /// The columns the MAC covers, in `SQL.settingsColumns` order.
    var values: [SQLiteValue]
    var mac: [UInt8]?

    init(_ row: SQLiteRow) {
        values = (0..<Self.columnCount).map { row.value(Int32($0)) }
        mac = row.blob(Int32(Self.columnCount))
    }

    func blob(_ index: Int) -> [UInt8]? {
        if case .blob(let bytes) = values[index] { return bytes }
        return nil
    }

    func integer(_ index: Int) -> Int64? {
        if case .integer(let integer) = values[index] { return integer }
        return nil
    }

    func text(_ index: Int) -> String? {
        if case .text(let text) = values[index] { return text }
        return nil
    }
}

/// The meta row as read.
struct MetaRecord {
    var algorithm: String?
    var rounds: Int64?
    var blockSize: Int64?
    var parallelism: Int64?
    var outputLength: Int64?
    var salt: [UInt8]?
    var keyCheck: [UInt8]?

    init(_ row: SQLiteRow) {
        algorithm = row.text(0)
        rounds = row.integer(1)
        blockSize = row.integer(2)
        parallelism = row.integer(3)
        outputLength = row.integer(4)
        salt = row.blob(5)
        keyCheck = row.blob(6)
    }
}

/// A credential as the columns of its row.
extension SQLiteCredentialStore {
    /// Refuses credentials the schema could not hold faithfully, before any transaction starts.
    func validate(_ credential: StoredCredential, action: String) throws(CredentialStoreError) {
        guard (1...1023).contains(credential.id.count) else {
            throw CredentialStoreError(.io, "cannot \(action): a credential ID must be 1 to 1023 bytes")
        }
        guard (credential.credentialBlob?.count ?? 0) <= 32 else {
            throw CredentialStoreError(.io, "cannot \(action): a credBlob must be at most 32 bytes")
        }
        guard credential.userHandle.count <= 64 else {
            throw CredentialStoreError(.io, "cannot \(action): a user handle must be at most 64 bytes")
        }
        for date in [credential.creationDate, credential.hiddenDate].compactMap({ $0 }) {
            let seconds = date.timeIntervalSince1970
            guard seconds.isFinite, abs(seconds) < 9e12 else {
                throw CredentialStoreError(.io, "cannot \(action): a date is out of range")
            }
        }
    }

    /// The authenticated columns of `credential` exactly as the row stores them, in `CredentialColumn` order.
    static func values(of credential: StoredCredential) -> [SQLiteValue] {
        [
            .blob(credential.id),
            .text(credential.relyingPartyID),
            credential.relyingPartyName.map(SQLiteValue.text) ?? .null,
            .blob(credential.userHandle),
            credential.userName.map(SQLiteValue.text) ?? .null,
            credential.userDisplayName.map(SQLiteValue.text) ?? .null,
            .integer(credential.isDiscoverable ? 1 : 0),
            .integer(credential.backupEligible ? 1 : 0),
            .integer(credential.backupState && credential.backupEligible ? 1 : 0),
            .integer(Int64((credential.creationDate.timeIntervalSince1970 * 1000).rounded())),
            .integer(Int64(credential.credentialProtection.rawValue)),
            credential.credentialBlob.map(SQLiteValue.blob) ?? .null,
            .integer(credential.hmacSecret ? 1 : 0),
            .integer(credential.largeBlobKey ? 1 : 0),
            .integer(credential.thirdPartyPayment ? 1 : 0),
            credential.hiddenDate.map { .integer($0.milliseconds) } ?? .null,
        ]
    }
}
