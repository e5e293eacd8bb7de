import CSQLite
import Foundation
import CTAP2

/// How the store runs SQL: every write in one `BEGIN IMMEDIATE` transaction, every SQLite failure turned into a
/// `CredentialStoreError` that says what was being done.
extension SQLiteCredentialStore {
    /// Runs `body` inside one `BEGIN IMMEDIATE` transaction; commits if it returns, rolls back if anything throws.
    func write<Result: Sendable>(
        _ action: @autoclosure () -> String,
        _ body: (SQLiteConnection, inout KeyCache) throws(CredentialStoreError) -> Result
    ) throws(CredentialStoreError) -> Result {
        try read(action()) { (connection, keys) throws(CredentialStoreError) -> Result in
            try Self.sql(action()) { () throws(SQLiteFailure) in try connection.prepared("BEGIN IMMEDIATE").run([]) }
            do throws(CredentialStoreError) {
                let result = try body(connection, &keys)
                do throws(CredentialStoreError) {
                    try Self.sql(action()) { () throws(SQLiteFailure) in try connection.prepared("COMMIT").run([]) }
                } catch {
                    // The body may have written the index for a change that is now rolled back: drop it, to be
                    // rebuilt.
                    removeIndex()
                    throw error
                }
                return result
            } catch {
                if !connection.isAutocommit {
                    try? connection.execute("ROLLBACK")
                }
                throw error
            }
        }
    }

    @discardableResult
    func sql<Result>(
        _ action: @autoclosure () -> String,
        _ body: () throws(SQLiteFailure) -> Result
    ) throws(CredentialStoreError) -> Result {
        try Self.sql(action(), body)
    }

    /// Runs SQLite calls, turning a failure into a `CredentialStoreError` that says what was being done.
    @discardableResult
    static func sql<Result>(
        _ action: @autoclosure () -> String,
        _ body: () throws(SQLiteFailure) -> Result
    ) throws(CredentialStoreError) -> Result {
        do {
            return try body()
        } catch {
            switch error.primaryCode {
            case SQLITE_BUSY, SQLITE_LOCKED:
                throw CredentialStoreError(.busy, "cannot \(action()): the passkey store is in use by another process")
            case SQLITE_CORRUPT, SQLITE_NOTADB:
                throw CredentialStoreError(
                    .corrupt, "cannot \(action()): the passkey store is damaged (\(error.message))")
            case SQLITE_FULL:
                throw CredentialStoreError(.io, "cannot \(action()): the disk is full")
            case SQLITE_CONSTRAINT:
                throw CredentialStoreError(.io, "cannot \(action()): the store refused it (\(error.message))")
            case SQLITE_READONLY:
                throw CredentialStoreError(.io, "cannot \(action()): the passkey store is read-only")
            default:
                throw CredentialStoreError(.io, "cannot \(action()): \(error.message)")
            }
        }
    }
}
